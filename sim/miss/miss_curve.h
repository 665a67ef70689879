// @brief MissCurves: the steady-state per-layer miss fraction of slow-path steps as a function of (H, n), for every
// device buffer size H the planner looks at — from a miss surface (sim/miss/miss_surface.h: varies with H/K and n/H), a
// given constant, or fitted by replaying a top-k trace through a swap-in policy at every H in one pass
// (sim/miss/miss_fitter.h, the same binning as every other fit).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::sim {

/// The replayed steady-state curve of one buffer size.
struct MissCurve {
  RatioCurve by_ratio;                  // (n/H, miss fraction), n/H ascending; flat beyond both ends
  double ratio_min = 0, ratio_max = 0;  // n/H range the fraction was measured over
  int64_t slow_step_layers = 0;         // steady-state (request, step, layer) samples behind it
  double warmup = 0;                    // fraction over the warm-up steps (0 without samples)
  double hit_rate = -1;                 // replay hit rate over the whole trace, every step
  int32_t replayed_H = 0;               // buffer size of the replay (H × K_trace / K when rescaled)
};

class MissCurves {
 public:
  /// `surface` evaluated for `policy` at top-k `top_k` and ANY H (throws naming the file if the policy is absent).
  static MissCurves from_surface(const MissSurface& surface, const std::string& policy, int32_t top_k);
  /// The same fraction at every H and n > H (`--miss-fraction`); `why` names where it comes from.
  static MissCurves constant(double fraction, std::string why);
  /// Replays `trace_path` with `policy` at every H in `buffer_sizes`, in one pass. The trace's top_k must equal
  /// `scenario_top_k` (else hisparse::Error naming the trace, both values and the remedy) unless `rescale`: then each
  /// H is replayed at H_t = round(H / scenario_top_k × K_trace) (the same H/K) and the fraction is applied at the same
  /// n/H. An H the trace never exceeds after the warm-up has nothing measured: `fallback` applies there (and to any
  /// H not replayed), and the description names it.
  static MissCurves from_trace(const std::string& trace_path, const std::string& policy,
                               const std::vector<int32_t>& buffer_sizes, int64_t row_bytes, int threads,
                               const MissCurves& fallback, int32_t scenario_top_k, bool rescale = false);

  /// Steady-state fraction at sequence length n for buffer size H (0 when n <= H).
  double fraction(int32_t H, int64_t n) const;
  /// Whether fraction(H, n) reads beyond what was measured (n/H or H/K outside the measured range). A replayed
  /// trace covers every length it recorded (n/H × the replayed H within its n range), warm-up steps included.
  bool extrapolated(int32_t H, int64_t n) const;
  /// What fraction(H, ·) is read from and the n/H range measured there, for warnings: the surface and its column(s)
  /// at H/K, or the trace's steady state at H ("" for a given constant).
  std::string measured_range(int32_t H) const;
  bool from_trace() const { return kind_ == Kind::kTrace; }
  /// The replayed curve of H (trace only); throws naming H when H was not replayed.
  const MissCurve& curve(int32_t H) const;
  /// One line naming the source (for reports).
  const std::string& description() const { return description_; }
  /// The context length of every decode step the replayed trace recorded, in trace order (trace only; empty
  /// otherwise): the lengths an advice on the trace is given at when no --seq-lens or --workload names others.
  const std::vector<int32_t>& trace_step_seq_lens() const { return trace_step_seq_lens_; }
  /// Buffer sizes whose fraction is the fallback's because the trace never went past them.
  const std::vector<int32_t>& unmeasured() const { return unmeasured_; }

 private:
  enum class Kind { kSurface, kConstant, kTrace };
  Kind kind_ = Kind::kConstant;
  std::string description_;
  std::shared_ptr<const MissSurface> surface_;  // kSurface
  std::string policy_;
  int32_t top_k_ = 0;                          // kSurface, kTrace: the scenario's K (for the bound)
  double constant_ = 0;                        // kConstant
  std::map<int32_t, MissCurve> by_h_;          // kTrace: one per measured H
  int64_t trace_n_min_ = 0, trace_n_max_ = 0;  // kTrace: the context lengths the trace recorded
  std::vector<int32_t> trace_step_seq_lens_;   // kTrace: each decode step's n
  std::shared_ptr<const MissCurves> fallback_; // kTrace
  std::vector<int32_t> unmeasured_;
};

/// The default surface (default_miss_surface of the scenario's top_k) for `policy` at that top_k.
MissCurves default_miss_curves(const Scenario& scenario, const std::string& policy = "sglang-lru");

}  // namespace hisparse::sim
