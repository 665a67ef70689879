// @brief StepTimeModel: the steady-state length of one decode step for a batch of equal requests: the closed form of
// the one step model (sim/cost/step/step_estimate.h) that the serving engine also runs, with a miss fraction.
//
// The planner asks thousands of "what if B requests of n tokens decode together?" questions; running the
// discrete-event engine for each would be slow and noisy, so this prices the engine's steady-state step with the
// copies at their uncontended rate (every GPU of a NUMA node drawing its fair share of host-memory bandwidth): equal
// to the engine's step in integer ns on a pinned batch (tests/sim/cost/step/test_step_estimate.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/step/pipeline_step.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/engine/sim_time.h"
#include "sim/cost/step/step_cost.h"

namespace hisparse::sim {

/// Per-layer miss fraction of a slow-path step (n > H) of the K − 1 selections that can miss; a function of n.
using MissFraction = std::function<double(int64_t n)>;

/// Largest B in [0, cap] with fits(B); fits must be monotone (true up to some B, false after): doubling, then
/// bisection.
template <class Fits>
int64_t largest_fitting(int64_t cap, const Fits& fits) {
  if (cap <= 0 || !fits(1)) return 0;
  int64_t lo = 1, hi = 2;
  while (hi <= cap && fits(hi)) { lo = hi; hi *= 2; }
  if (hi > cap) {
    if (fits(cap)) return cap;
    hi = cap;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

class StepTimeModel {
 public:
  /// `miss_fraction` is used in HiSparse mode only (null: no misses).
  StepTimeModel(const Scenario& scenario, const CostParams& params, bool hisparse, MissFraction miss_fraction)
      : StepTimeModel(scenario, params, hisparse ? KvMode::kHiSparse : KvMode::kFull, std::move(miss_fraction)) {}
  /// Any mode; dynamic residency demotes requests when B of them overflow the rank's device pool of
  /// `device_pool_tokens` (sim/cost/step/dynamic_residency.h; 0 = the scenario's memory budget).
  StepTimeModel(const Scenario& scenario, const CostParams& params, KvMode mode, MissFraction miss_fraction,
                int64_t device_pool_tokens = 0);

  // The estimator's DecodeCostModel keeps a reference to its rank scenario: the model must stay where it was built.
  StepTimeModel(const StepTimeModel&) = delete;
  StepTimeModel& operator=(const StepTimeModel&) = delete;

  StepEstimate step(int64_t batch, int64_t seq_len) const { return step(batch, ContextMix::single(seq_len)); }
  /// A batch whose requests follow `mix` (class shares of the batch; sums over the batch are expectations).
  StepEstimate step(int64_t batch, const ContextMix& mix) const { return step(batch, mix, 0); }
  /// The instance holds `instance_requests` in all, the busiest rank `batch` (StepEstimator::closed_form; 0 = every
  /// rank holds `batch`): a load that does not fill every rank, as `hisparse fidelity` prices a concurrency.
  StepEstimate step(int64_t batch, const ContextMix& mix, int64_t instance_requests) const;

  /// Pipeline parallelism (decode.pp > 1): the cycle of `batch` requests per rank (sim/cost/step/pipeline_step.h); step()
  /// returns it as the step (each request gains a token per cycle), the stage's terms × pp and the hops under sync.
  PipelineCycle pipeline(int64_t batch, const ContextMix& mix, int64_t instance_requests = 0) const;
  int pp() const { return pp_; }
  const StageLink& stage_link() const { return link_; }

  /// Rows one request loads per step (per GPU: a pipeline stage's layers): 0 on the fast path (e ≤ H), else (min(e, K) − 1) × offloaded layers ×
  /// fraction(e), e = n (DeepSeek-V4: n / 4 C4 entries over its C4 layers).
  double misses_per_request(int64_t seq_len) const;
  /// Dynamic residency: requests of B (per rank) in swap mode in the steady state (0 in the other modes).
  int64_t swap_requests(int64_t batch, const ContextMix& mix) const;
  /// Dynamic residency: the largest batch per rank in [0, cap] that stays resident (the resident graph).
  int64_t max_resident_batch(const ContextMix& mix, int64_t cap) const;
  int64_t device_pool_tokens() const { return device_pool_; }
  /// Largest batch per rank in [0, cap] whose step fits `slo_ns` (0 if even one request misses it).
  int64_t max_batch_within(int64_t seq_len, SimTime slo_ns, int64_t cap) const {
    return max_batch_within(ContextMix::single(seq_len), slo_ns, cap);
  }
  int64_t max_batch_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const;
  /// Largest batch per rank in [0, cap] whose miss copy alone (and backup alone) fits `slo_ns`; cap if unbounded.
  int64_t max_batch_io_within(int64_t seq_len, SimTime slo_ns, int64_t cap) const {
    return max_batch_io_within(ContextMix::single(seq_len), slo_ns, cap);
  }
  int64_t max_batch_io_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const;

  /// Effective host→device rate of the miss copy: min(gathered-row rate, PCIe H2D, host DRAM share per GPU); with a
  /// calibrated swap-in copy (CostParams::swap_in_cost) the measured small-row rate of `batch` requests replaces the
  /// gathered-row rate, as the serving engine does.
  double h2d_rate(int64_t batch = 0) const;
  /// Fixed time of one step's miss copy: one call per layer, each paying the per-operation cost (calibrated: that of
  /// the swap-in kernel `batch` requests run; 0 = not known, the large-batch kernel).
  SimTime h2d_fixed_ns(int64_t batch = 0) const;
  double d2h_rate() const { return est_.d2h_rate(); }
  const RankLayout& layout() const { return est_.layout(); }
  bool hisparse() const { return est_.hisparse(); }
  bool dynamic() const { return est_.dynamic(); }
  const Scenario& rank_scenario() const { return est_.rank_scenario(); }
  const StepEstimator& estimator() const { return est_; }

 private:
  /// One stage's step (the whole step without pipeline parallelism).
  StepEstimate stage_step(int64_t batch, const ContextMix& mix, int64_t instance_requests) const;

  StepEstimator est_;  // one GPU of a rank; under pp > 1, of the binding pipeline stage (core/pipeline_stages.h)
  MissFraction miss_fraction_;
  int pp_ = 1;
  StageLink link_;
  int64_t device_pool_ = 0, page_ = 64;  // dynamic residency: the rank's device pool and page (tokens)
};

/// pp > 1: one line on the pipeline for plan and advise: the stage split, and at batch 1 and `seq_len` the stage
/// step, the hop, the cycle and the bubble (modelled); "" without pipeline parallelism.
std::string describe_pipeline(const Scenario& scenario, const StepTimeModel& model, int64_t seq_len);

}  // namespace hisparse::sim
