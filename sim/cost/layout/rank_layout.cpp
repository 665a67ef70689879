// @brief Ranks, collective link, rank scenario and attention all-reduce of a decode instance (see rank_layout.h).
#include "sim/cost/layout/rank_layout.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

RankLayout rank_layout(const Scenario& s) {
  const InstanceSpec& d = s.deployment.decode;
  RankLayout r;
  r.gpus = std::max(1, d.gpus);
  r.ranks = std::clamp(d.dp_attention, 1, r.gpus);
  r.attention_tp = std::max(1, std::max(1, d.tp) / r.ranks);
  const int per_node = std::max(1, std::min(r.gpus, s.hardware.gpus_per_node));
  r.gpus_per_numa = std::max(1, per_node / std::max(1, s.hardware.numa_nodes));
  return r;
}

CollectiveLink collective_link(const Scenario& s) {
  const HardwareSpec& hw = s.hardware;
  const RankLayout layout = rank_layout(s);
  CollectiveLink c;
  const int per_node = std::max(1, hw.gpus_per_node);
  c.nodes = (layout.gpus + per_node - 1) / per_node;
  if (c.nodes > 1) {
    // Instance over several nodes: the collectives leave the node; each GPU's share of the node's NICs bounds them.
    if (hw.nic.count <= 0 || !(hw.nic.bits_per_s > 0))
      throw_error("{}: decode instance of {} GPUs spans {} nodes of {} (hardware gpus_per_node) but hardware nic.count "
                  "and nic.bits_per_s are not set: the inter-node all-to-all needs them",
                  s.source, layout.gpus, c.nodes, per_node);
    const double nic = hw.nic.bits_per_s / 8 * hw.nic.count / per_node;
    c.bytes_per_s = hw.nvlink_bytes_per_s > 0 ? std::min(hw.nvlink_bytes_per_s, nic) : nic;
    c.label = fmt::format("inter-node nic ({} nodes, {:.1f} GB/s per GPU)", c.nodes, c.bytes_per_s / 1e9);
  } else if (hw.nvlink_bytes_per_s > 0) {
    c.bytes_per_s = hw.nvlink_bytes_per_s;
    c.label = fmt::format("nvlink ({:.1f} GB/s per GPU)", c.bytes_per_s / 1e9);
  } else {
    // No NVLink: peer-to-peer over PCIe, bounded by the GPU's own link (the switch's other ports are not modelled).
    if (!(hw.pcie.h2d_bulk_bytes_per_s > 0))
      throw_error("{}: hardware has no nvlink_bytes_per_s and no pcie.h2d_bulk_bytes_per_s: no link for the all-to-all",
                  s.source);
    c.bytes_per_s = hw.pcie.h2d_bulk_bytes_per_s;
    c.label = fmt::format("pcie peer, no nvlink ({:.1f} GB/s per GPU)", c.bytes_per_s / 1e9);
  }
  return c;
}

Scenario rank_scenario(const Scenario& s) {
  Scenario out = s;
  const RankLayout r = rank_layout(s);
  out.model.attention_heads = std::max(1, s.model.attention_heads / r.attention_tp);
  out.hardware.nvlink_bytes_per_s = collective_link(s).bytes_per_s;
  return out;
}

CollectiveSite collective_site(const Scenario& s, const CostParams& p, bool all_to_all) {
  CollectiveSite site;
  if (rank_layout(s).gpus <= 1) return site;
  const CollectiveLink link = collective_link(s);
  site.internode = link.nodes > 1;
  site.latency_ns = all_to_all ? p.all_to_all_latency_ns(site.internode) : p.all_reduce_latency_ns(site.internode);
  site.link_bytes_per_s = link.bytes_per_s;
  return site;
}

SimTime attention_allreduce_ns(int gpus_per_rank, double collective_bytes_per_s, bool internode, const ModelSpec& model,
                               const CostParams& p, int64_t batch) {
  if (gpus_per_rank <= 1 || batch <= 0) return 0;
  const CollectiveSite site{internode, p.all_reduce_latency_ns(internode), collective_bytes_per_s};
  const double bytes = static_cast<double>(batch) * model.hidden_size * 2.0;
  // NCCL's all-reduce from the op tables (one node only), else the ring over the link.
  if (!internode)
    if (const SimTime t = table_all_reduce_ns(p.op_tables ? p.op_tables->set.get() : nullptr, gpus_per_rank, bytes, collective_bytes_per_s,
                                              p.efficiency.nvlink);
        t >= 0)
      return t * model.layers;
  return allreduce_ns(bytes, gpus_per_rank, site, p.efficiency.nvlink) * model.layers;
}

}  // namespace hisparse::sim
