// @brief A serving run's work known before it starts: the requests it sends, the tokens they decode (the workload's
// output lengths, cycled for closed-loop clients) and the wall time that takes at the simulator's measured rate. For
// simulate's and sweep's up-front estimates (core/work_estimate.h) and the sweep's cost-weighted ETA.
#pragma once

#include <cstdint>

#include "sim/cost/step/kv_mode.h"
#include "sim/serving/serving_simulation.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

struct ServingWork {
  int64_t requests = 0;
  double decode_tokens = 0;  // sum of the requests' output lengths
  double seconds = 0;        // estimated wall time of the run on one core
};

/// The work of one run of `workload` (already cut to its duration) in `mode` with `clients` (concurrency 0 = open
/// loop). The time is decode_tokens × seconds per token + lockstep steps × seconds per step (closed loop: steps ≈
/// tokens / concurrency), with the rates measured below (run_estimate.cpp); expect it within a factor of about 2.
ServingWork estimate_serving_work(const Workload& workload, KvMode mode, const ClientSpec& clients);

/// Where the rates come from, for the estimate's line.
const char* serving_work_basis();

}  // namespace hisparse::sim
