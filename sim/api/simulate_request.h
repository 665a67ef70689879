// @brief `hisparse simulate` as a library call: SimulateRequest (the scenario, its overrides, the workload, the
// serving miss model, admission) → a loaded SimulationSetup, then one ServingResult per (mode, overlap, clients)
// run. The CLI loops over its modes, overlaps and concurrency levels; the sweep runs one point.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/scenario_setup.h"
#include "sim/engine/chrome_trace.h"
#include "sim/miss/miss_model.h"
#include "sim/serving/serving_simulation.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {


struct SimulationSetup {
  Scenario scenario;
  CostParams cost;
  std::string cost_line;
  Workload workload;
  std::unique_ptr<MissModel> miss;
  AdmissionCheck admission = AdmissionCheck::kPools;
  V2Coordinator v2_coordinator = V2Coordinator::kCurrent;  // --admission v2's rules
  int32_t max_retries = 8;
  bool prefix_cache = false;       // SimulateRequest::prefix_cache resolved for the deployment
  std::string prefix_cache_why;    // "on (--prefix-cache on)", "on (SGLang's default: colocated)", ...
  std::vector<std::string> notes;  // what the set-up assumed (prefill shaped like decode, TTFT not modelled), in order
};

/// Loads `request` (`command` first in errors). setup.require_sparse_indexer is the caller's: `hisparse simulate`
/// sets it, a sweep point leaves it as its grid says.
SimulationSetup load_simulation(const SimulateRequest& request, const std::string& command = "simulate");

/// One serving run of the loaded set-up. `clients.concurrency` 0: the workload's own arrivals. `on_request_done`
/// (may be empty) hears the requests finished or rejected so far, after each.
ServingResult simulate(const SimulationSetup& setup, KvMode mode, OverlapMode overlap, const ClientSpec& clients,
                       bool record_steps = true, ChromeTrace* timeline = nullptr,
                       const std::function<void(int64_t)>& on_request_done = {});

/// The requests one serving run sends: the closed-loop clients' count, else the workload's.
int64_t requests_sent(const SimulationSetup& setup, const ClientSpec& clients);

}  // namespace hisparse::sim
