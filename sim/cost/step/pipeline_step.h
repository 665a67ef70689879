// @brief A decode step under pipeline parallelism (deployment decode.pp; core/pipeline_stages.h has the layer split):
// micro-batches as SGLang runs them through the stages, the bubble, and the stage-to-stage activation transfer.
//
// SGLang's PP scheduler (python/sglang/srt/managers/scheduler_pp_mixin.py:13-35, event_loop_pp, sgl-project/sglang
// 8da8de17) keeps pp micro-batches, each its own running batch, and runs them in turn on every stage; a micro-batch
// is scheduled again only once the last stage's next-token ids for it have come back (:69-74, received before the
// next micro-batch runs). The sends are blocking. So with B requests per rank:
//   micro_batches m = min(pp, B), micro_batch b = ceil(B / pp) requests (the largest; the split is assumed even),
//   latency   L = pp × stage(b) + (pp − 1) × hop(b) + return(b)  one micro-batch through every stage and back;
//   occupancy O = m × (stage(b) + hop(b))                          a stage runs m micro-batches, each then sent;
//   cycle     = max(L, O): every request gains one token per cycle (its TPOT);
//   bubble    = 1 − m × stage(b) / cycle: the share of a cycle a stage idles.
// Every stage is priced as the binding one (the most layers; assumed: SGLang's blocking loop paces every stage at the
// slowest, so a shorter stage waits), so L over-states a batch-1 step by the layer difference (1 of 32 on V4-Pro).
#pragma once

#include <cstdint>
#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

struct PipelineCycle {
  int stages = 1;
  int64_t batch = 0;           // requests per rank
  int64_t micro_batches = 0;   // non-empty micro-batches: min(pp, batch)
  int64_t micro_batch = 0;     // requests of the largest micro-batch: ceil(batch / pp)
  SimTime stage_ns = 0;        // one stage on one micro-batch
  SimTime hop_ns = 0;          // a micro-batch's activations to the next stage
  SimTime return_ns = 0;       // its next-token ids from the last stage back to the first
  SimTime latency_ns = 0;      // pp × stage + (pp − 1) × hop + return
  SimTime occupancy_ns = 0;    // micro_batches × (stage + hop)
  SimTime cycle_ns = 0;        // max(latency, occupancy)
  double bubble = 0;           // 1 − micro_batches × stage / cycle
};

/// Requests of the largest micro-batch: ceil(batch / pp) (0 for an empty batch).
int64_t micro_batch_size(int pp, int64_t batch);
/// The cycle of `batch` requests on `pp` stages, one stage taking `stage_ns` on a micro-batch (see the header).
PipelineCycle pipeline_cycle(int pp, int64_t batch, SimTime stage_ns, SimTime hop_ns, SimTime return_ns);

/// The link between two stages, per GPU and direction: the slowest boundary paces the pipeline. Stages are TP groups
/// in rank order (SGLang: rank = pp_rank × tp + tp_rank), so when the instance spans nodes some boundary crosses
/// them: each GPU's share of the node's NICs (collective_link's rule); inside a node, NVLink.
struct StageLink {
  double bytes_per_s = 0;
  SimTime latency_ns = 0;      // per send: the NIC's per-message cost across nodes, else the cost file's intranode
                               // all-reduce latency (assumed: a p2p send costs what a collective's launch does)
  SimTime gather_latency_ns = 0;  // the receiver's all-gather over its TP group (the cost file's intranode latency)
  double nvlink_bytes_per_s = 0;  // the all-gather's link
  bool internode = false;
  std::string label;
};
StageLink stage_link(const Scenario& scenario, const CostParams& params);

/// Bytes one micro-batch hands to the next stage: hidden states and residual, bf16 (b × hidden × 2 B × 2; assumed:
/// DeepSeek-style models send both as PPProxyTensors). Each GPU of the TP group sends 1 / tp of it and the receiver
/// all-gathers (scheduler_pp_mixin.py sends with all_gather_group = the attention TP group).
double stage_activation_bytes(const ModelSpec& model, int64_t micro_batch);
/// One hop: latency + bytes / tp over the stage link, then the all-gather of the other (tp − 1) / tp over NVLink.
SimTime stage_hop_ns(const StageLink& link, double bytes, int tp);

}  // namespace hisparse::sim
