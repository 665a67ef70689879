// @brief The capacity plan's outputs: plan.json (the contract of issue 6: `rows` with seq_len, mode,
// max_concurrency, binding_limit, decode_tokens_per_s, hbm_bytes_per_request, host_bytes_per_request, plus details),
// plan.md and plan.html (the same tables, every figure with its formula, plots embedded as PNG).
#pragma once

#include <string>
#include <vector>

#include "sim/plan/capacity_plan.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

/// Facts about the run the reports print beside the plan.
struct PlanRunInfo {
  std::string command_line;
  double plan_seconds = 0;          // compute_capacity_plan + the miss curves (trace replay included), no plotting
  std::string workload;             // one line describing --workload, "" if none
  std::string calibration;          // which measurements the cost model used (sim/calibration/calibration_choice.h)
};

/// One PNG written by scripts/plot_plan.py.
using PlanPlot = DocPlot;

/// The plot files plot_plan.py writes, in report order.
std::vector<PlanPlot> plan_plot_list();

std::string plan_to_json(const CapacityPlan& plan, const PlanRunInfo& info);
std::string plan_to_markdown(const CapacityPlan& plan, const PlanRunInfo& info, const std::vector<PlanPlot>& plots);
std::string plan_to_html(const CapacityPlan& plan, const PlanRunInfo& info, const std::vector<PlanPlot>& plots);

// Shared number formatting ("93.45 GB", "1,234", "12.3 ms").
std::string plan_bytes(double bytes);
std::string plan_int(int64_t v);
std::string plan_limit_value(int64_t per_rank);  // "—" for limits that do not apply

}  // namespace hisparse::sim
