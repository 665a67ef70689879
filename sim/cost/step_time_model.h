// @brief StepTimeModel: the steady-state length of one decode step for a batch of equal requests, built from
// DecodeCostModel's per-operation times and the same IO rules the serving engine applies (sim/serving_simulation).
//
// The planner asks thousands of "what if B requests of n tokens decode together?" questions; running the
// discrete-event engine for each would be slow and noisy, so this is the engine's step in closed form for a
// homogeneous batch: equal on one GPU with an uncontended link in `none` mode (tests/sim/plan/test_plan_limits.cpp),
// and with every GPU of a NUMA node drawing its fair share of host-memory bandwidth.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/cost_params.h"
#include "sim/cost/decode_cost_model.h"
#include "sim/cost/context_mix.h"
#include "sim/engine/sim_time.h"
#include "sim/cost/step_cost.h"

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

/// One step of one data-parallel rank holding `batch` requests of `seq_len` tokens.
struct StepEstimate {
  int64_t batch = 0;             // requests per rank
  int64_t seq_len = 0;           // the mix's mean length, rounded
  StepCost cost;                 // critical path of the step (sum = step_ns)
  SimTime step_ns = 0;           // = TPOT
  SimTime h2d_transfer_ns = 0;   // the miss copy alone (latency + bytes / rate), exposed or not
  SimTime backup_transfer_ns = 0;
  double misses = 0;             // rows loaded per step on one GPU, all layers
  double h2d_bytes = 0;          // per GPU per step
  double backup_bytes = 0;       // per GPU per step
  double tokens_per_s = 0;       // per instance: batch × ranks / step
};

/// The rank view of an instance: attention data parallelism gives `ranks` independent request sets; under attention
/// tensor parallelism (tp / dp_attention > 1) every GPU of a rank holds the whole latent of its requests and
/// computes a share of the heads.
struct RankLayout {
  int ranks = 1;             // dp ranks per instance (dp_attention)
  int attention_tp = 1;      // GPUs per rank
  int gpus = 1;              // GPUs per instance
  int gpus_per_numa = 1;     // GPUs sharing one NUMA node's host-memory bandwidth
};
RankLayout rank_layout(const Scenario& scenario);

/// The link an instance's collectives (expert all-to-all, attention all-reduce) run on, per GPU and direction:
/// NVLink inside a node, the node's NICs shared by its GPUs when the instance spans nodes, PCIe peer-to-peer
/// without NVLink. Throws naming the file when the hardware gives no such link.
struct CollectiveLink {
  double bytes_per_s = 0;
  int nodes = 1;          // nodes one instance spans
  std::string label;      // "nvlink (450.0 GB/s per GPU)", ...
};
CollectiveLink collective_link(const Scenario& scenario);

/// Attention all-reduce of one step under attention TP over `gpus_per_rank` GPUs (0 when 1): per layer, a ring
/// all-reduce of the o_proj output (batch × hidden × 2 B, bf16): 2 (p − 1) / p of it over the collective link at the
/// NVLink efficiency, plus one collective latency (the cost file's all_to_all_latency).
SimTime attention_allreduce_ns(int gpus_per_rank, double collective_bytes_per_s, const ModelSpec& model,
                               const CostParams& params, int64_t batch);

class StepTimeModel {
 public:
  /// `miss_fraction` is used in HiSparse mode only (null: no misses).
  StepTimeModel(const Scenario& scenario, const CostParams& params, bool hisparse, MissFraction miss_fraction);

  // DecodeCostModel keeps a reference to rank_scenario_: the model must stay where it was built.
  StepTimeModel(const StepTimeModel&) = delete;
  StepTimeModel& operator=(const StepTimeModel&) = delete;

  StepEstimate step(int64_t batch, int64_t seq_len) const { return step(batch, ContextMix::single(seq_len)); }
  /// A batch whose requests follow `mix` (class shares of the batch; sums over the batch are expectations).
  StepEstimate step(int64_t batch, const ContextMix& mix) const;

  /// Rows one request loads per step: 0 on the fast path (n ≤ H), else (min(n, K) − 1) × layers × fraction(n).
  double misses_per_request(int64_t seq_len) const;
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
  double d2h_rate() const { return d2h_rate_; }
  const RankLayout& layout() const { return layout_; }
  bool hisparse() const { return hisparse_; }
  const Scenario& rank_scenario() const { return rank_scenario_; }

 private:
  Scenario rank_scenario_;   // heads divided by attention TP (what one GPU computes)
  CostParams params_;
  bool hisparse_;
  MissFraction miss_fraction_;
  DecodeCostModel cost_;
  RankLayout layout_;
  double row_bytes_ = 0, h2d_rate_ = 0, h2d_link_ = 0, d2h_rate_ = 0;
  double collective_bytes_per_s_ = 0;  // collective_link(scenario)
  /// The attention all-reduce of `batch` requests under attention TP (0 under attention DP).
  SimTime allreduce(int64_t batch) const {
    return attention_allreduce_ns(layout_.attention_tp, collective_bytes_per_s_, rank_scenario_.model, params_, batch);
  }
  int64_t top_k_ = 0, H_ = 0;
  int64_t window_ = 0;  // GQA sliding layers: tokens attended (0 = none)
};

}  // namespace hisparse::sim
