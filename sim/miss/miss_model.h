// @brief MissModel: how many KV rows a request's decode step loads host→device (summed over layers).
// Two models: a statistical one (miss fraction by phase and n/H, from a miss surface or fitted to a trace) and a
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

/// Per-layer miss fraction of the K − 1 selections that can miss (the newest token has a reserved slot), by phase
/// of the request (the rule of sim/miss/miss_surface.h): step 0 after an empty start → first_step_fraction; step 0 of a
/// non-empty start and steps 1..warmup_steps → warmup_fraction (the buffer may still hold rows the request never
/// selected); later steps → by_ratio at n/H. Always 0 on the fast path (n <= H); capped by the steady-state bound
/// min(1, (n − H) / (K − 1)) of a full buffer — except the first step and the warm-up after an empty start, while
/// the buffer is still filling.
struct StatisticalMissParams {
  int32_t layers = 61;
  int32_t top_k = 2048;
  int32_t H = 4096;
  double first_step_fraction = 1.0;                      // first step after an empty start (all miss by contract)
  int32_t warmup_steps = 0;                              // W = ceil(H/K) for fitted values; 0 = no warm-up phase
  double warmup_fraction = 1.0;                          // used only when warmup_steps > 0
  std::vector<std::pair<double, double>> by_ratio = {{1.0, 0.10}};  // (n/H, miss fraction), ascending n/H
  std::string fitted_from;                               // trace path, or "" for hand-given values
};

std::unique_ptr<MissModel> make_statistical_miss_model(const StatisticalMissParams& params);

/// Replays `trace_path` with `policy` at buffer size H once, keeping per step (selected, misses). Simulated
/// request r follows trace request r mod R, step s follows trace step s (wrapping to step 1 past the end);
/// counts are scaled by model_layers / trace layers when they differ.
std::unique_ptr<MissModel> make_trace_miss_model(const std::string& trace_path, const std::string& policy,
                                                 int32_t H, int32_t model_layers, int64_t row_bytes);

/// Fits StatisticalMissParams to a trace replayed with `policy` at H (sim/miss/miss_fitter.h: the steady curve by n/H,
/// the warm-up apart; the first step of an empty-start trace as measured, else 1 by contract).
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
