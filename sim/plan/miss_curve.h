// @brief MissCurves: the per-layer miss fraction of slow-path steps as a function of n/H, for each device buffer
// size H the planner looks at — from the statistical model's parameters, or fitted by replaying a top-k trace
// through a swap-in policy at every H in one pass (sim/replay's engine).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/miss_model.h"

namespace hisparse::sim {

struct MissCurve {
  std::vector<std::pair<double, double>> by_ratio;  // (n/H, miss fraction), n/H ascending; flat beyond both ends
  double ratio_min = 0, ratio_max = 0;              // n/H range the fraction was measured over (trace only)
  int64_t slow_step_layers = 0;                     // (request, step, layer) samples behind it (trace only)
  double hit_rate = -1;                             // replay hit rate over the whole trace (trace only)
};

class MissCurves {
 public:
  /// The same curve at every H (the statistical model's by_ratio).
  static MissCurves statistical(const StatisticalMissParams& params);
  /// Replays `trace_path` with `policy` at every H in `buffer_sizes` (each >= the trace's top_k), in one pass.
  /// An H the trace never exceeds (no slow-path step) has nothing measured: it falls back to `fallback`.
  static MissCurves from_trace(const std::string& trace_path, const std::string& policy,
                               const std::vector<int32_t>& buffer_sizes, int64_t row_bytes, int threads,
                               const StatisticalMissParams& fallback);

  /// Fraction at sequence length n for buffer size H (interpolated in n/H).
  double fraction(int32_t H, int64_t n) const;
  const MissCurve& curve(int32_t H) const;
  bool from_trace() const { return from_trace_; }
  /// One line naming the source (for reports).
  const std::string& description() const { return description_; }
  /// Buffer sizes whose curve is the fallback because the trace never went past them.
  const std::vector<int32_t>& unmeasured() const { return unmeasured_; }

 private:
  bool from_trace_ = false;
  std::string description_;
  MissCurve shared_;                  // statistical: one curve for all H
  std::map<int32_t, MissCurve> by_h_; // trace: one per replayed H
  std::vector<int32_t> unmeasured_;
};

}  // namespace hisparse::sim
