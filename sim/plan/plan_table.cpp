// @brief plan_table and its terminal text (see plan_table.h).
#include "sim/plan/plan_table.h"

#include <fmt/format.h>

#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {

namespace {

PlanTableRow table_row(const PlanRow& r) {
  PlanTableRow t;
  t.seq_len = r.seq_len;
  t.mode = to_string(r.mode);
  t.applicable = r.binding_limit != kNotApplicable;
  t.max_per_rank = r.max_per_rank;
  t.max_concurrency = r.max_concurrency;
  t.binding_limit = r.binding_limit;
  t.tpot_ms = static_cast<double>(r.at_max.tpot_ns) * 1e-6;  // step / accepted tokens per request-step (MTP)
  t.decode_tokens_per_s = r.decode_tokens_per_s;
  t.hbm_bytes_per_request = r.hbm_per_request.value;
  t.host_bytes_per_request = r.host_per_request.value;
  t.resident_per_rank = r.resident_per_rank;
  return t;
}

}  // namespace

std::vector<PlanTableRow> plan_table(const CapacityPlan& p) {
  // compute_capacity_plan pushes one dynamic row per (full, HiSparse) pair, in the same order.
  std::vector<PlanTableRow> rows;
  for (size_t i = 0; i < p.rows.size(); ++i) {
    rows.push_back(table_row(p.rows[i]));
    if (p.rows[i].mode == KvMode::kHiSparse && i / 2 < p.dynamic_rows.size())
      rows.push_back(table_row(p.dynamic_rows[i / 2]));
  }
  return rows;
}

std::string plan_table_text(const std::vector<PlanTableRow>& rows, const std::string& not_applicable) {
  std::string o = fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10} {:>12} {:>12} {:>12}\n", "seq_len", "mode", "max conc",
                              "binding limit", "TPOT ms", "tok/s", "HBM/req", "host/req");
  for (const PlanTableRow& r : rows) {
    if (!r.applicable) {
      o += fmt::format("{:>8}  {:<9} {:>10} {}\n", r.seq_len, r.mode, "-", not_applicable);
      continue;
    }
    const bool dynamic = r.mode == to_string(KvMode::kDynamic);
    o += fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10.2f} {:>12.0f} {:>12} {:>12}", r.seq_len, r.mode,
                     plan_int(r.max_concurrency), r.binding_limit, r.tpot_ms, r.decode_tokens_per_s,
                     plan_bytes(r.hbm_bytes_per_request),
                     dynamic || r.host_bytes_per_request > 0 ? plan_bytes(r.host_bytes_per_request) : "-");
    // Dynamic residency: up to which batch it stays resident (the full-KV step).
    if (dynamic) o += fmt::format("  resident (full-KV step) up to {} per rank", plan_int(r.resident_per_rank));
    o += "\n";
  }
  return o;
}

}  // namespace hisparse::sim
