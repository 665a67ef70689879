// @brief plan.md and the terminal table: the plan document as GitHub Markdown (plots as linked PNG files).
#include <cmath>

#include <fmt/format.h>

#include "core/text_format.h"
#include "sim/plan/plan_document.h"

namespace hisparse::sim {

std::string plan_int(int64_t v) { return group_digits(v); }

std::string plan_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1e12) return fmt::format("{:.2f} TB", b / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} B", plan_int(static_cast<int64_t>(std::llround(b))));
}

std::string plan_limit_value(int64_t per_rank) { return per_rank < 0 ? "—" : plan_int(per_rank); }

std::vector<PlanPlot> plan_plot_list() {
  return {{"plan_memory.png", "HBM per GPU at each mode's maximum concurrency, and host DRAM per node", ""},
          {"plan_throughput.png", "Decode throughput per instance against batch size (both modes; markers: maximum concurrency)", ""},
          {"plan_limits.png", "Requests per instance under each limit, per sequence length (the binding one filled)", ""},
          {"plan_sweep_buffer.png", "device_buffer_size sweep: concurrency, misses and TPOT", ""},
          {"plan_sweep_ratio.png", "host_to_device_ratio sweep: pools, host DRAM and concurrency", ""}};
}

std::string plan_to_markdown(const CapacityPlan& plan, const PlanRunInfo& info, const std::vector<PlanPlot>& plots) {
  return document_to_markdown(build_plan_document(plan, info, plots), plots);
}

std::string plan_to_text(const CapacityPlan& p) {
  std::string o = fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10} {:>12} {:>12} {:>12}\n", "seq_len", "mode", "max conc",
                              "binding limit", "TPOT ms", "tok/s", "HBM/req", "host/req");
  for (const PlanRow& r : p.rows) {
    if (r.binding_limit == kNotApplicable) {
      o += fmt::format("{:>8}  {:<9} {:>10} {}\n", r.seq_len, to_string(r.mode), "-", p.hisparse_not_applicable);
      continue;
    }
    o += fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10.2f} {:>12.0f} {:>12} {:>12}\n", r.seq_len, to_string(r.mode),
                     plan_int(r.max_concurrency), r.binding_limit, r.at_max.tpot_ns * 1e-6, r.decode_tokens_per_s,
                     plan_bytes(r.hbm_per_request.value),
                     r.host_per_request.value > 0 ? plan_bytes(r.host_per_request.value) : "-");
    if (r.mode != KvMode::kHiSparse) continue;
    // Dynamic residency after each HiSparse row: its memory limits, and up to which batch it stays resident.
    for (const PlanRow& d : p.dynamic_rows)
      if (d.seq_len == r.seq_len)
        o += fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10.2f} {:>12.0f} {:>12} {:>12}  resident (full-KV step) up to {} per rank\n",
                         d.seq_len, to_string(d.mode), plan_int(d.max_concurrency), d.binding_limit, d.at_max.step_ns * 1e-6,
                         d.decode_tokens_per_s, plan_bytes(d.hbm_per_request.value), plan_bytes(d.host_per_request.value),
                         plan_int(d.resident_per_rank));
  }
  return o;
}

}  // namespace hisparse::sim
