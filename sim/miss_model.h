// @brief MissModel: how many KV rows a request's decode step loads host→device (summed over layers).
// Two models: a statistical one (miss fraction as a function of n/H, fitted to a trace or given in YAML) and a
// trace-replayed one (any swap-in policy of cpu_ref/policies run over a recorded top-k trace).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hisparse::sim {

/// One step of one request as the engine sees it.
struct MissQuery {
  int64_t request = 0;    // simulated request id
  int64_t step = 0;       // decode step since admission (0 = first)
  int32_t n = 0;          // sequence length at this step
  bool empty_start = false;  // PD disaggregation with n > H at admission: the buffer starts empty
};

struct MissResult {
  int64_t selected = 0;  // valid selections over all layers
  int64_t misses = 0;    // rows loaded over all layers
};

class MissModel {
 public:
  virtual ~MissModel() = default;
  /// `carry`: per-request fractional remainder the caller keeps, so expected values round without an RNG
  /// and totals stay exact over a request's life.
  virtual MissResult step(const MissQuery& q, double& carry) const = 0;
  virtual std::string describe() const = 0;
};

/// Per-layer miss fraction of the K selections on slow-path steps, piecewise linear in n/H.
struct StatisticalMissParams {
  int32_t layers = 61;
  int32_t top_k = 2048;
  int32_t H = 4096;
  double first_step_fraction = 1.0;                      // first step after an empty start (all miss by contract)
  std::vector<std::pair<double, double>> by_ratio = {{1.0, 0.10}};  // (n/H, miss fraction), ascending n/H
  std::string fitted_from;                               // trace path, or "" for hand-given values
};

std::unique_ptr<MissModel> make_statistical_miss_model(const StatisticalMissParams& params);

/// Replays `trace_path` with `policy` at buffer size H once, keeping per step (selected, misses). Simulated
/// request r follows trace request r mod R, step s follows trace step s (wrapping to step 1 past the end);
/// counts are scaled by model_layers / trace layers when they differ.
std::unique_ptr<MissModel> make_trace_miss_model(const std::string& trace_path, const std::string& policy,
                                                 int32_t H, int32_t model_layers, int64_t row_bytes);

/// Fits StatisticalMissParams to a trace replayed with `policy` (bins of n/H; first steps of empty starts apart).
StatisticalMissParams fit_statistical_miss_model(const std::string& trace_path, const std::string& policy,
                                                 int32_t H, int32_t model_layers, int64_t row_bytes);

/// Per-step counters of one replayed trace request (exposed for tests and the fit).
struct ReplayedStep {
  int32_t n = 0;
  int64_t selected = 0;
  int64_t newest_hits = 0;  // selections of the newest token (reserved slot, can never miss)
  int64_t misses = 0;
};
struct ReplayedTrace {
  int32_t layers = 0;
  int32_t top_k = 0;
  bool empty_start = false;
  std::vector<std::vector<ReplayedStep>> requests;  // [trace request][step]
};
ReplayedTrace replay_trace_counters(const std::string& trace_path, const std::string& policy, int32_t H,
                                    int64_t row_bytes);

}  // namespace hisparse::sim
