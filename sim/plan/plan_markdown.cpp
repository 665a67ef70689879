// @brief plan.md: the plan document as GitHub Markdown (plots as linked PNG files).
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

}  // namespace hisparse::sim
