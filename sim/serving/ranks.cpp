// @brief Ranks, the rank scenario and the collective link of a decode instance (see ranks.h).
#include "sim/serving/ranks.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

ServingRanks serving_ranks(const Scenario& s) {
  ServingRanks r;
  r.layout = rank_layout(s);
  const InstanceSpec& d = s.deployment.decode;
  const HardwareSpec& hw = s.hardware;
  if (r.layout.gpus % r.layout.ranks != 0)
    throw_error("{}: decode.gpus {} is not a multiple of decode.dp_attention {}: every dp rank needs the same GPUs",
                s.source, r.layout.gpus, r.layout.ranks);
  r.gpus_per_rank = r.layout.gpus / r.layout.ranks;
  const int per_node = std::max(1, hw.gpus_per_node);
  r.nodes = (r.layout.gpus + per_node - 1) / per_node;
  // The step time model's rank scenario (heads / attention TP, sim/plan/step_time_model.cpp), so plan and simulate
  // compute the same attention per GPU.
  {
    const StepTimeModel model(s, CostParams{}, false, nullptr);
    r.rank_scenario = model.rank_scenario();
  }
  HardwareSpec& rh = r.rank_scenario.hardware;
  if (r.nodes > 1) {
    // Instance over several nodes: the collectives leave the node; each GPU's share of the node's NICs bounds them.
    if (hw.nic.count <= 0 || !(hw.nic.bits_per_s > 0))
      throw_error("{}: decode instance of {} GPUs spans {} nodes of {} (hardware gpus_per_node) but hardware nic.count "
                  "and nic.bits_per_s are not set: the inter-node all-to-all needs them",
                  s.source, r.layout.gpus, r.nodes, per_node);
    const double nic = hw.nic.bits_per_s / 8 * hw.nic.count / per_node;
    r.collective_bytes_per_s = hw.nvlink_bytes_per_s > 0 ? std::min(hw.nvlink_bytes_per_s, nic) : nic;
    r.collective_link = fmt::format("inter-node nic ({} nodes, {:.1f} GB/s per GPU)", r.nodes, r.collective_bytes_per_s / 1e9);
  } else if (hw.nvlink_bytes_per_s > 0) {
    r.collective_bytes_per_s = hw.nvlink_bytes_per_s;
    r.collective_link = fmt::format("nvlink ({:.1f} GB/s per GPU)", r.collective_bytes_per_s / 1e9);
  } else {
    // No NVLink: peer-to-peer over PCIe, bounded by the GPU's own link (the switch's other ports are not modelled).
    if (!(hw.pcie.h2d_bulk_bytes_per_s > 0))
      throw_error("{}: hardware has no nvlink_bytes_per_s and no pcie.h2d_bulk_bytes_per_s: no link for the all-to-all",
                  s.source);
    r.collective_bytes_per_s = hw.pcie.h2d_bulk_bytes_per_s;
    r.collective_link = fmt::format("pcie peer, no nvlink ({:.1f} GB/s per GPU)", r.collective_bytes_per_s / 1e9);
  }
  rh.nvlink_bytes_per_s = r.collective_bytes_per_s;
  (void)d;
  return r;
}

SimTime attention_allreduce_ns(const ServingRanks& r, const CostParams& p, int64_t batch) {
  const int p_gpus = r.gpus_per_rank;
  if (p_gpus <= 1 || batch <= 0) return 0;
  const Scenario& s = r.rank_scenario;
  const double bytes = static_cast<double>(batch) * s.model.hidden_size * 2.0;
  const double moved = 2.0 * (p_gpus - 1) / p_gpus * bytes;
  const double rate = r.collective_bytes_per_s * p.efficiency.nvlink;
  const SimTime per_layer = p.all_to_all_latency_ns + seconds_to_ns_ceil(moved / rate);
  return per_layer * s.model.layers;
}

}  // namespace hisparse::sim
