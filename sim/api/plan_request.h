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

namespace hisparse::sim {

struct PlanRequest {
  ScenarioChoice setup;
  MissChoice misses;
  std::vector<int64_t> seq_lens;    // empty: the planner's defaults, or the workload's p50/p90/p99/max
  std::string workload;             // name / YAML / trace whose request lengths set the lengths ("" = none)
  std::vector<int32_t> sweep_buffer_sizes;  // empty: top_k × 1 … 8
  std::vector<int32_t> sweep_ratios;        // empty: the default ratios
  /// The sweeps are the deployment's own H and ratio only (a sweep grid point is one setting).
  bool single_setting = false;
  std::optional<int64_t> batch_cap;  // largest batch per rank considered
  bool memory_only = false;          // --limits memory
  StrategyOptions strategies;        // recall_file is read by run_plan (recall_json is filled there)
  std::string command_line;          // for the reports' provenance
  std::string command = "plan";      // what errors name first ("sweep <point>" for a sweep's)
};

struct PlanOutcome {
  Scenario scenario;
  CapacityPlan plan;
  PlanRunInfo info;
  std::string json() const { return plan_to_json(plan, info); }
};

/// Loads and computes the plan (throws hisparse::Error naming the flag or file at fault).
PlanOutcome run_plan(const PlanRequest& request);

}  // namespace hisparse::sim
