// @brief The collectives of a decode step priced by where they run: all-reduce and expert dispatch/combine, each with
// an intranode and an internode fixed latency, and DeepEP's published low-latency dispatch/combine table by EP size.
#pragma once

#include <string>
#include <vector>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// One EP size of DeepEP's published low-latency figures: the time of one dispatch (fp8) and one combine (bf16) of
/// `tokens_per_rank` tokens of `hidden` each routed to `topk` experts, and the bandwidth DeepEP reports for it.
struct DeepEpRow {
  int ep = 0;
  double dispatch_us = 0;
  double dispatch_gb_per_s = 0;
  double combine_us = 0;
  double combine_gb_per_s = 0;
};

/// The published table (scenarios/cost_model/*.yaml `deepep_low_latency`) with the setting it was measured in. Rows
/// with ep <= gpus_per_node ran inside one node (NVLink), the others across nodes (RDMA).
struct DeepEpTable {
  int tokens_per_rank = 0;
  int hidden = 0;
  int topk = 0;
  int gpus_per_node = 0;            // of the publishing cluster (8 × H800)
  double nvlink_bytes_per_s = 0;    // per GPU and direction of that cluster
  double rdma_bytes_per_s = 0;      // per GPU (one CX7 400 Gb/s)
  std::vector<DeepEpRow> rows;      // ascending ep
  bool empty() const { return rows.empty(); }
};

enum class ExpertOp { kDispatch, kCombine };

/// Published time (us) of one dispatch or combine at EP `ep`: the row itself, log-linear in ep between rows, the
/// end row beyond them.
double deepep_published_us(const DeepEpTable& table, ExpertOp op, int ep);

/// Where one collective runs: its fixed latency (the cost file's intranode or internode term) and the link its
/// payload crosses, per GPU and direction.
struct CollectiveSite {
  bool internode = false;
  SimTime latency_ns = 0;
  double link_bytes_per_s = 0;
};

/// One DeepEP low-latency dispatch or combine of `tokens` per rank (hidden `hidden`, top-`topk`) at EP `ep`: the
/// site's fixed latency plus the published time's remainder, scaled by the token copies moved (tokens × topk ×
/// hidden against the table's) and by the published fabric's rate over this link (NVLink inside a node, RDMA
/// across). A fixed latency above the published time leaves no payload part (the remainder is floored at 0).
SimTime deepep_ns(const DeepEpTable& table, ExpertOp op, int ep, double tokens, int hidden, int topk,
                  const CollectiveSite& site);

/// One ring all-reduce of `bytes` over `gpus` GPUs: the site's fixed latency plus 2 (p − 1) / p of the bytes over
/// the link at `link_efficiency`. 0 for one GPU.
SimTime allreduce_ns(double bytes, int gpus, const CollectiveSite& site, double link_efficiency);

/// Throws naming `where` unless the table is usable: its setting set, ep ascending, every time and rate > 0.
void check_deepep_table(const DeepEpTable& table, const std::string& where);

}  // namespace hisparse::sim
