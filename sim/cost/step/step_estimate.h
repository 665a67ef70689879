// @brief StepEstimator: the one model of a decode step. The planner's closed form (StepTimeModel) and the serving
// engine (sim/serving/decode_step.cpp) both compute a step from its four pieces, so a cost-model change is made once:
//   (a) rank_compute  the GPU compute of one rank's batch: phases, micro-batch split, attention-TP all-reduce, when
//                     the miss copy may start and what must follow it;
//   (b) miss_copy, backup  the copies as flows: bytes, fixed latency (per layer, calibrated or not), the call's own
//                     rate cap; the closed form moves the bytes at the link's share, the engine on its contended links;
//   (c) rank_end      given when the copies started and ended: when the rank reaches the all-to-all, and its stall
//                     and exposed copy (none: serial; two-batch: overlapped, less the SMs the zero-copy swap-in takes);
//   (d) moe_ns        the MoE / all-to-all / LM-head phase of the instance (both overlap modes).
// closed_form() = (a) + (b) at bytes / rate + (c) + (d), the step of an instance whose ranks hold equal batches.
// Dynamic residency (KvMode::kDynamic, SGLang's hisparse_dynamic.py): a batch with no request in swap mode runs the
// resident graph (full-KV phases, no swap-in, no miss copy, the forward does not wait for the backup); one swap
// request puts the whole batch on the swap graph (HiSparse's phases; resident requests in it hit their full KV).
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/deployment_spec.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/step/kv_mode.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/cost/step/step_cost.h"
#include "sim/cost/terms/transfer_granularity.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// One step of one data-parallel rank holding `batch` requests of `seq_len` tokens.
struct StepEstimate {
  int64_t batch = 0;             // requests per rank
  int64_t seq_len = 0;           // the mix's mean length, rounded
  StepCost cost;                 // critical path of the step (sum = step_ns)
  SimTime step_ns = 0;           // the step's length (= TPOT without MTP)
  double accepted_tokens = 1;    // tokens each request gains per step (MTP: 1 + a + … + a^d; sim/cost/step/speculative.h)
  SimTime tpot_ns = 0;           // step_ns / accepted_tokens
  SimTime h2d_transfer_ns = 0;   // the miss copy alone (latency + bytes / rate), exposed or not
  SimTime backup_transfer_ns = 0;
  double misses = 0;             // rows loaded per step on one GPU, all layers
  double h2d_bytes = 0;          // per GPU per step
  double backup_bytes = 0;       // per GPU per step
  double tokens_per_s = 0;       // per instance: batch × ranks × accepted tokens / step
};

/// (a) The GPU compute of one rank's step, both micro-batches summed in two-batch mode. Times from the step's start.
struct RankCompute {
  GpuPhases phases;         // attention includes the attention-TP all-reduce
  SimTime compute = 0;      // phases.compute()
  SimTime io_ready = 0;     // earliest start of the miss copy: none: after indexer + top-k + swap-in; two-batch: after
                            // the first micro-batch's first layer has selected
  SimTime tail = 0;         // what follows the copy's end: none: all attention; two-batch: one layer of the last
                            // micro-batch's attention
  int64_t copy_beside = 0;  // two-batch: requests of the micro-batch whose swap-in copies beside the other's compute
  bool resident = false;    // dynamic residency: the resident graph (no request in swap mode)
  // IndexShare (none mode): the shared layers' copies start on a side stream after their anchor's top-k (SGLang
  // #29637), each hidden under the compute of the layers before it: at most `prefetch_share` of the copy, and at
  // most `prefetch_window`, the shared layers' attention.
  double prefetch_share = 0;
  SimTime prefetch_window = 0;
};

/// (b) One copy of a step (per GPU): `latency` first, then `bytes` at most at `max_rate` (0: only the links bound it).
struct CopyCall {
  double bytes = 0;
  SimTime latency = 0;
  double max_rate = 0;
};

/// (c) Where a rank's step stands when it reaches the expert all-to-all. Times from the step's start.
struct RankEnd {
  SimTime done = 0;
  SimTime stall = 0;  // waiting for the backup before the copy could start (the part not hidden by compute)
  SimTime h2d = 0;    // exposed miss copy, with the compute delayed by the SMs the zero-copy swap-in held
  SimTime prefetch_hidden = 0;  // copy time the shared layers' side-stream prefetch hid (not in h2d)
};

class StepEstimator {
 public:
  StepEstimator(const Scenario& scenario, const CostParams& params, KvMode mode);
  // cost_ keeps a reference to rank_scenario_: the estimator must stay where it was built.
  StepEstimator(const StepEstimator&) = delete;
  StepEstimator& operator=(const StepEstimator&) = delete;

  // The batch description: a rank's requests by their lengths, or B requests following a mix (expectations).
  /// Rows attention reads per layer: the top-k of a sparse model, every token of a dense one (top_k 0). DeepSeek-V4:
  /// of a C4 layer's entries(n) = n / 4 compressed entries.
  int64_t attended(int64_t n) const { return top_k_ > 0 ? std::min<int64_t>(entries(n), top_k_) : n; }
  /// Entries the offloaded cache holds for `n` tokens: n, or n / 4 C4 entries (DeepSeek-V4).
  int64_t entries(int64_t n) const { return n / compress_; }
  /// `swap`: the request is in the device-buffer mode (always in HiSparse mode; dynamic: once demoted).
  void add_request(GpuBatch& batch, int64_t n, bool swap = true) const;
  /// B requests following `mix`; dynamic: the `swap` requests of them in swap mode, the longest classes first (the
  /// demotion order), the rest resident.
  GpuBatch batch(int64_t requests, const ContextMix& mix, double swap = -1) const;
  /// Which graph the batch runs: resident only in dynamic mode with no request in swap mode.
  bool resident_graph(const GpuBatch& b) const { return dynamic_ && b.swap == 0; }

  RankCompute rank_compute(const GpuBatch& batch) const;                  // (a)
  CopyCall miss_copy(int64_t requests, double misses) const;              // (b) misses: rows over all layers
  CopyCall backup(int64_t requests) const;                                // (b) requests backing up a token
  RankEnd rank_end(const RankCompute& c, SimTime io_start, SimTime io_end, bool copies) const;  // (c)
  /// (c) of the resident graph: no miss copy and no wait before the forward; the rank still ends after its backup
  /// (the next step's backup queues behind it on the backup stream), the excess counted as stall.
  RankEnd resident_end(const RankCompute& c, SimTime backup_end) const;
  SimTime io_start(const RankCompute& c, SimTime backup_end) const { return std::max(c.io_ready, backup_end); }
  SimTime moe_ns(double instance_requests, double max_gpu_requests) const;  // (d), tokens = requests × positions()
  /// MTP: the d draft passes after the step, the busiest rank holding `busiest` (one token per request): each pass is
  /// one average decoder layer of the target at this batch (its attention side and its share of the MoE phase) plus
  /// the LM head (sim/cost/step/speculative.cpp). 0 without MTP.
  SimTime draft_ns(const GpuBatch& busiest, double instance_requests, double max_gpu_requests) const;
  /// MTP: the verify pass's batch, each request's 1 + d positions as queries of their own (the batch itself without).
  GpuBatch verify_batch(const GpuBatch& b) const;
  int64_t positions() const { return 1 + mtp_draft_; }       // query positions per request per step
  double accepted_tokens() const { return mtp_accepted_; }  // tokens per request per step
  /// Tokens of the busiest GPU at the all-to-all when the largest rank holds `max_rank_requests`: under attention TP
  /// a rank's GPUs share its tokens there.
  double max_gpu_tokens(double max_rank_requests) const {
    return max_rank_requests * layout_.ranks / layout_.gpus;
  }

  /// The closed form: every rank of the instance holds `batch` (`requests` of them), loads `misses` rows and backs
  /// up every request's previous token (the steady state); copies move at their rate on an uncontended link.
  /// `instance_requests` > 0: the instance holds that many in all (fewer than batch × ranks: the other ranks hold
  /// less), which sets the MoE phase's tokens and tokens_per_s; the busiest rank, holding `batch`, sets the rest.
  StepEstimate closed_form(const GpuBatch& batch, double misses, int64_t instance_requests = 0) const;

  /// Rate of the miss copy in the closed form: min(the call's cap, PCIe H2D, host DRAM share per GPU).
  double h2d_rate(const CopyCall& call) const { return call.max_rate > 0 ? std::min(call.max_rate, h2d_link_) : h2d_link_; }
  double h2d_link() const { return h2d_link_; }  // min(PCIe H2D, host DRAM share per GPU)
  /// Transfer granularity (sim/cost/terms/transfer_granularity.h) on this GPU's host path: decode loads `misses` rows (all
  /// layers) one layer at a time; prefill offloads `tokens` rows of every layer in one batched copy.
  TransferCost decode_transfer(double misses) const;
  TransferCost prefill_offload(int64_t tokens) const;
  const NumaPlacement& numa_placement() const { return placement_; }
  double d2h_rate() const { return d2h_rate_; }

  const DecodeCostModel& cost() const { return cost_; }
  const Scenario& rank_scenario() const { return rank_scenario_; }
  const RankLayout& layout() const { return layout_; }
  const CostParams& params() const { return params_; }
  bool hisparse() const { return hisparse_; }  // HiSparse's host pool and backup: HiSparse and dynamic modes
  bool dynamic() const { return dynamic_; }
  int64_t top_k() const { return top_k_; }
  int64_t device_buffer() const { return H_; }

 private:
  Scenario rank_scenario_;
  CostParams params_;
  bool hisparse_, dynamic_;
  DecodeCostModel cost_;
  DecodeCostModel resident_cost_;  // dynamic: the resident graph's phases (full KV's)
  RankLayout layout_;
  double collective_bytes_per_s_ = 0;
  bool internode_ = false;  // the instance spans nodes: its collectives pay the internode latencies
  double row_bytes_ = 0, h2d_link_ = 0, d2h_rate_ = 0;
  NumaPlacement placement_;
  HostPoolLayout host_layout_ = HostPoolLayout::kLayerFirst;  // the deployment's host_layout: copy calls per transfer
  int64_t top_k_ = 0, H_ = 0;
  int64_t window_ = 0;  // GQA sliding layers, DeepSeek-V4's every layer: tokens attended (0 = none)
  int64_t compress_ = 1;  // tokens per offloaded entry (DeepSeek-V4's C4: 4)
  int64_t mtp_draft_ = 0;     // MTP draft tokens per step (0 = off)
  double mtp_accepted_ = 1;   // E, accepted tokens per step
  double shared_share_ = 0;   // IndexShare: the fraction of layers that reuse an anchor's top-k
};

}  // namespace hisparse::sim
