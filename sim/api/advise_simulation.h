// @brief advise's figures beside a simulation: the advisor's goodput is a decode-only steady state at full batch
// (every dp rank holding its advised batch, no prefill, no admission waits, no ramp-down), `simulate` is closed-loop
// serving of a workload. For a workload's advice this runs `simulate` on the recommendation (and on full KV at its
// own concurrency when HiSparse is recommended), as the user would launch it, so the report prints both figures.
#pragma once

#include "sim/advise/advisor.h"
#include "sim/api/requests.h"

namespace hisparse::sim {

/// Closed-loop clients = the setting's advised concurrency, `--max-running-requests` as advised, 4 requests per
/// client and at least 64 (simulate's default), the advice's scenario overrides, miss source and overlap; fills
/// advice.simulated, or advice.simulated_note where the simulation cannot run (e.g. a trace of another top_k).
void simulate_advice(const AdviseRequest& request, Advice& advice);

}  // namespace hisparse::sim
