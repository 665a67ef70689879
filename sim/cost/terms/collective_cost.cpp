// @brief All-reduce and DeepEP dispatch/combine prices by where they run (see collective_cost.h).
#include "sim/cost/terms/collective_cost.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hisparse::sim {
namespace {

double row_us(const DeepEpRow& r, ExpertOp op) { return op == ExpertOp::kDispatch ? r.dispatch_us : r.combine_us; }

}  // namespace

double deepep_published_us(const DeepEpTable& t, ExpertOp op, int ep) {
  if (t.rows.empty()) throw_error("DeepEP table: no rows");
  if (ep <= t.rows.front().ep) return row_us(t.rows.front(), op);
  if (ep >= t.rows.back().ep) return row_us(t.rows.back(), op);
  for (size_t i = 1; i < t.rows.size(); ++i) {
    const DeepEpRow& a = t.rows[i - 1];
    const DeepEpRow& b = t.rows[i];
    if (ep > b.ep) continue;
    // The published sizes double from row to row: interpolate in log2(ep).
    const double f = (std::log2(ep) - std::log2(a.ep)) / (std::log2(b.ep) - std::log2(a.ep));
    return row_us(a, op) + f * (row_us(b, op) - row_us(a, op));
  }
  return row_us(t.rows.back(), op);
}

SimTime deepep_ns(const DeepEpTable& t, ExpertOp op, int ep, double tokens, int hidden, int topk,
                  const CollectiveSite& site) {
  if (!(tokens > 0) || ep <= 1) return 0;
  const double published_ns = deepep_published_us(t, op, ep) * 1e3;
  const double payload_ns = std::max(0.0, published_ns - static_cast<double>(site.latency_ns));
  const double copies = tokens * topk * hidden / (static_cast<double>(t.tokens_per_rank) * t.topk * t.hidden);
  const double fabric = site.internode ? t.rdma_bytes_per_s : t.nvlink_bytes_per_s;
  const double link = site.link_bytes_per_s > 0 ? fabric / site.link_bytes_per_s : 1.0;
  return site.latency_ns + static_cast<SimTime>(std::ceil(payload_ns * copies * link));
}

SimTime allreduce_ns(double bytes, int gpus, const CollectiveSite& site, double link_efficiency) {
  if (gpus <= 1 || !(bytes > 0)) return 0;
  const double moved = 2.0 * (gpus - 1) / gpus * bytes;
  return site.latency_ns + seconds_to_ns_ceil(moved / (site.link_bytes_per_s * link_efficiency));
}

void check_deepep_table(const DeepEpTable& t, const std::string& where) {
  if (t.tokens_per_rank <= 0 || t.hidden <= 0 || t.topk <= 0 || t.gpus_per_node <= 0 || !(t.nvlink_bytes_per_s > 0) ||
      !(t.rdma_bytes_per_s > 0))
    throw_error("{}: tokens_per_rank, hidden, topk, gpus_per_node, nvlink_bytes_per_s and rdma_bytes_per_s must all "
                "be > 0 (the setting the figures were published in)", where);
  if (t.rows.empty()) throw_error("{}: rows is empty (expected one row per published EP size)", where);
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const DeepEpRow& r = t.rows[i];
    if (r.ep < 2) throw_error("{}: rows[{}].ep {} (expected an EP size >= 2)", where, i, r.ep);
    if (i > 0 && r.ep <= t.rows[i - 1].ep)
      throw_error("{}: rows[{}].ep {} is not above rows[{}].ep {} (expected ascending EP sizes)", where, i, r.ep, i - 1,
                  t.rows[i - 1].ep);
    if (!(r.dispatch_us > 0) || !(r.combine_us > 0) || !(r.dispatch_gb_per_s > 0) || !(r.combine_gb_per_s > 0))
      throw_error("{}: rows[{}] (ep {}): every time and bandwidth must be > 0", where, i, r.ep);
  }
}

}  // namespace hisparse::sim
