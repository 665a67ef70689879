// @brief The rank view of a decode instance (attention DP vs TP), the link its collectives run on, the scenario one
// GPU of a rank computes and the attention-TP all-reduce: what both the step estimate and the serving engine's
// topology are built from.
#pragma once

#include <cstdint>
#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

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

/// The scenario one GPU of a rank computes: attention heads / attention TP (each GPU still reads every latent row,
/// so only the FLOP side of attention shrinks), and nvlink_bytes_per_s replaced by the collective link's rate
/// (DecodeCostModel prices the all-to-all with it).
Scenario rank_scenario(const Scenario& scenario);

/// Where an instance's collectives run (sim/cost/terms/collective_cost.h): across nodes when the instance spans several
/// (collective_link's nodes > 1), with the cost file's all-to-all or all-reduce latency for that site, over the
/// collective link. A one-GPU instance has no collectives: intranode, no link.
CollectiveSite collective_site(const Scenario& scenario, const CostParams& params, bool all_to_all);

/// Attention all-reduce of one step under attention TP over `gpus_per_rank` GPUs (0 when 1): per layer, a ring
/// all-reduce of the o_proj output (batch × hidden × 2 B, bf16): 2 (p − 1) / p of it over the collective link at the
/// NVLink efficiency, plus the all-reduce latency of the site (intranode or, when the instance spans nodes, internode).
SimTime attention_allreduce_ns(int gpus_per_rank, double collective_bytes_per_s, bool internode,
                               const ModelSpec& model, const CostParams& params, int64_t batch);

}  // namespace hisparse::sim
