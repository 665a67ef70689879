// @brief run_check: `hisparse check` as a library call (the pools of sim/capacity/pool_check.h against a workload's
// longest request, and DeepSeek-V4's C4 release table), and the same check as the first step of plan and advise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/api/requests.h"
#include "sim/capacity/c4_release.h"
#include "sim/capacity/pool_check.h"

namespace hisparse::sim {

struct CheckOutcome {
  Scenario scenario;
  std::string workload_line;  // "workload W (file): N requests; longest prompt …" ("" = none)
  PoolCheck check;
  std::vector<C4ReleaseRow> release;  // DeepSeek-V4 only
};

/// Loads the scenario and the workload and checks them; problems are in check.problems (run_check does not throw
/// for them: the report is the answer).
CheckOutcome run_check(const CheckRequest& request);

/// The report: the scenario, the workload, the pools and problems, the C4 release table.
std::string check_to_text(const CheckOutcome& outcome);

/// plan and advise: checks `scenario` against `workload` ("" = start-up checks only) and throws hisparse::Error
/// naming every problem before anything is simulated.
void require_pools_fit(const Scenario& scenario, const std::string& workload, const std::string& command);

}  // namespace hisparse::sim
