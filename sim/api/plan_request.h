// @brief `hisparse plan` as a library call: PlanRequest (the scenario, its overrides, the miss model, the lengths,
// the sweeps, the strategy section) → PlanOutcome (the capacity plan and what its reports say about the run). The
// CLI, the sweep and the Python module build a request and print or return the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/scenario_setup.h"
#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"
#include "sim/plan/plan_table.h"

namespace hisparse::sim {


struct PlanOutcome {
  Scenario scenario;
  CapacityPlan plan;
  PlanRunInfo info;
  std::vector<PlanTableRow> table;  // plan_table(plan): the printed table, plan.json's rows, Python's PlanResult
  std::string json() const { return plan_to_json(plan, info); }
};

/// Loads and computes the plan (throws hisparse::Error naming the flag or file at fault).
PlanOutcome run_plan(const PlanRequest& request);

/// Writes out_dir/plan.json, then (plots) runs scripts/plot_plan.py on it, then plan.md and plan.html with the PNGs
/// inlined; without plots, stale plan_*.png of an earlier run are removed (plan_output.cpp).
void write_plan_files(const PlanOutcome& outcome, const std::string& out_dir, bool plots);

/// What `hisparse plan` prints: the pools, the cost model, the table, the strategies and the warnings.
std::string plan_console_text(const PlanOutcome& outcome, bool verbose = true);

}  // namespace hisparse::sim
