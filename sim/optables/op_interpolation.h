// @brief How a measured op table is read between and beyond its grid points (docs/cost_model.md, "Op tables"):
// piecewise linear in one grid variable, bilinear in two, log-log in message bytes; a floor below the grid and a
// linear extrapolation above it, each result saying which of the three it is.
#pragma once

#include <vector>

namespace hisparse::sim {

/// Where a query fell on one axis of the grid.
enum class AxisPlace {
  kInside,   // between two grid points, or on one: interpolated from measurements
  kFloor,    // below the smallest point: that point's time (the kernel does not get cheaper below its smallest launch)
  kAbove,    // above the largest point: linear from the last two (modelled, extrapolated)
  kNoData,   // above a one-point axis: nothing to extrapolate from
};

/// One measured point of an axis: the grid value and the time there, with the index of the row that holds it.
struct AxisPoint {
  double x = 0;
  double us = 0;
  int row = -1;
};

/// The value on one axis and the rows it was read from (one or two).
struct AxisValue {
  double us = 0;
  AxisPlace place = AxisPlace::kInside;
  int row_lo = -1, row_hi = -1;
};

/// Piecewise linear through `pts` (x ascending, distinct): at or below the first point its time (kFloor below it);
/// between two points linear in x, or, with `log_log`, linear in log(time) against log(x) (a power law between the
/// points: exact both where a collective is latency-bound, t flat, and where it is bandwidth-bound, t ∝ bytes); above
/// the last, linear in x from the last two (kAbove, in x even with `log_log`: past the grid a collective is
/// bandwidth-bound), never below the last point's time; with one point, kNoData above it.
AxisValue interpolate_axis(const std::vector<AxisPoint>& pts, double x, bool log_log = false);

/// The combined place of two axes: kNoData over kAbove over kFloor/kInside (a floor reads a measured time).
AxisPlace worse(AxisPlace a, AxisPlace b);

}  // namespace hisparse::sim
