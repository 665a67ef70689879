// @brief Ranks of a decode instance as SGLang deploys it: attention DP vs TP (rank_layout(), shared with `plan`),
// the scenario one rank's GPU computes, and the link its collectives (expert all-to-all, attention all-reduce) run on:
// NVLink inside a node, the node's NICs when the instance spans nodes, PCIe peer-to-peer without NVLink.
#pragma once

#include <cstdint>
#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

struct ServingRanks {
  RankLayout layout;            // rank_layout(scenario): ranks per instance, attention TP, GPUs
  int32_t gpus_per_rank = 1;    // gpus / ranks: the GPUs that hold one rank's latent and split its heads
  int32_t nodes = 1;            // nodes one instance spans: ceil(gpus / gpus_per_node)
  double collective_bytes_per_s = 0;  // per GPU and direction
  std::string collective_link;  // "nvlink", "inter-node nic", "pcie peer (no nvlink)" with the rate
  /// The scenario one GPU of a rank computes: attention heads / attention TP (as StepTimeModel's rank scenario), and
  /// nvlink_bytes_per_s replaced by the collective link's rate (DecodeCostModel prices the all-to-all with it).
  Scenario rank_scenario;
};

/// Throws naming the deployment file and field when the layout cannot be served (GPUs not a multiple of ranks, no
/// link for the collectives).
ServingRanks serving_ranks(const Scenario& scenario);

/// Attention all-reduce of one step under attention TP (0 when gpus_per_rank == 1): per layer, a ring all-reduce of
/// the o_proj output (batch × hidden × 2 B, bf16): 2 (p − 1) / p of it over the collective link at the NVLink
/// efficiency, plus the all-reduce latency of the site (internode when the instance spans nodes).
SimTime attention_allreduce_ns(const ServingRanks& ranks, const CostParams& params, int64_t batch);

}  // namespace hisparse::sim
