// @brief Piecewise-linear and log-log reading of one grid axis (see op_interpolation.h).
#include "sim/optables/op_interpolation.h"

#include <algorithm>
#include <cmath>

namespace hisparse::sim {

AxisValue interpolate_axis(const std::vector<AxisPoint>& pts, double x, bool log_log) {
  AxisValue v;
  if (pts.empty()) {
    v.place = AxisPlace::kNoData;
    return v;
  }
  const AxisPoint& first = pts.front();
  if (x <= first.x) {
    v.us = first.us;
    v.row_lo = v.row_hi = first.row;
    v.place = x < first.x ? AxisPlace::kFloor : AxisPlace::kInside;
    return v;
  }
  for (size_t i = 1; i < pts.size(); ++i) {
    if (x > pts[i].x) continue;
    const AxisPoint& a = pts[i - 1];
    const AxisPoint& b = pts[i];
    v.row_lo = a.row;
    v.row_hi = b.row;
    if (x == b.x) {
      v.us = b.us;
      v.row_lo = b.row;
    } else if (log_log && a.x > 0 && a.us > 0 && b.us > 0) {
      const double f = (std::log(x) - std::log(a.x)) / (std::log(b.x) - std::log(a.x));
      v.us = std::exp(std::log(a.us) + f * (std::log(b.us) - std::log(a.us)));
    } else {
      v.us = a.us + (b.us - a.us) * (x - a.x) / (b.x - a.x);
    }
    return v;
  }
  if (pts.size() == 1) {
    v.place = AxisPlace::kNoData;
    return v;
  }
  const AxisPoint& a = pts[pts.size() - 2];
  const AxisPoint& b = pts.back();
  // A time that fell between the last two points (noise at the top of a sweep) must not extrapolate downward.
  v.us = std::max(b.us, b.us + (b.us - a.us) * (x - b.x) / (b.x - a.x));
  v.place = AxisPlace::kAbove;
  v.row_lo = a.row;
  v.row_hi = b.row;
  return v;
}

AxisPlace worse(AxisPlace a, AxisPlace b) {
  auto rank = [](AxisPlace p) { return p == AxisPlace::kNoData ? 3 : p == AxisPlace::kAbove ? 2 : 1; };
  if (rank(a) != rank(b)) return rank(a) > rank(b) ? a : b;
  return a == AxisPlace::kFloor || b == AxisPlace::kFloor ? AxisPlace::kFloor : AxisPlace::kInside;
}

}  // namespace hisparse::sim
