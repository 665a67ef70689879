// @brief Held-out length check of a miss surface: fit on the requests at some sequence lengths, predict the steady-state
// miss fraction of the others from it, and report the error (`hisparse fit-miss-model --holdout-lengths`). It tests the
// surface's length term: that the fraction read at (H/K, n/H) carries over to lengths it was not measured at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/miss/miss_fitter.h"

namespace hisparse::sim {

/// Which requests are held out: those whose n range (first..last decode step's seq_len) contains one of `lengths`.
struct HoldoutSplit {
  std::vector<int64_t> lengths;
  bool holds(const ReplayRequestRows& rows) const;
};

/// One steady point of the held-out fit against the training fit's curve of the same (policy, H/K) column.
struct HoldoutPoint {
  std::string policy;
  double h_over_k = 0;
  double n_over_h = 0;    // the held-out bin's mean n/H
  double measured = 0;    // held-out fraction
  double predicted = 0;   // training curve at n_over_h (linear, flat beyond its ends, as MissSurface reads it)
  bool extrapolated = false;  // n_over_h outside the training column's measured n/H range
};

struct HoldoutReport {
  std::vector<HoldoutPoint> points;  // policy, then H/K, then n/H ascending
  /// Over points (unweighted), predicted − measured in absolute value; `_inside` only the non-extrapolated ones.
  double mean_abs_error = 0, max_abs_error = 0;
  double mean_abs_error_inside = 0, max_abs_error_inside = 0;
  int64_t inside = 0;
  std::vector<std::string> unpredicted;  // held-out columns whose training column has no steady sample, one line each
};

/// Compares every steady point of `held_out` with `train`'s column of the same policy and H/K; a column the training
/// requests have no steady sample in is listed in `unpredicted`. Throws when no held-out point could be compared.
HoldoutReport compare_held_out(const MissFitter& train, const MissFitter& held_out);

}  // namespace hisparse::sim
