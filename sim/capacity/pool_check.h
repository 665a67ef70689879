// @brief `hisparse check` (and the first step of plan and advise): the pool mistakes a deployment would hit, found
// before anything is simulated — a request longer than a pool holds (sglang #30401), a configuration that cannot
// start under the sizing of the engine version it names (sglang PR #28752), pools that cannot all be allocated — and
// every pool's capacity on its own line (logical, host, device, C4, SWA, indexer) instead of one usage figure
// (sglang #30909). Every figure is modelled from the pool arithmetic of core/ (docs/capacity.md "hisparse check").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"

namespace hisparse::sim {

/// One pool of one dp rank: what it holds and what the longest request needs of it.
struct PoolCapacity {
  std::string pool;  // "logical", "host", "device", "C4 device", "C4 host", "SWA", "indexer", "full"
  std::string unit;  // "tokens" | "entries"
  int64_t capacity = 0;
  std::string capacity_formula;
  int64_t need = 0;  // of the longest request (0 when no request length was given)
  std::string need_formula;
};

/// A mistake found: the pool, the figure and the fix, in one message.
struct CheckProblem {
  std::string pool;
  std::string message;
};

struct PoolCheck {
  std::string engine_version, engine_source;
  bool hisparse = false;
  int64_t longest_prompt = 0, longest_request = 0;  // tokens (0: no workload given)
  std::vector<PoolCapacity> pools;
  std::vector<std::string> notes;  // figures besides the pools (the #30909 usage an empty pool reported, …)
  std::vector<CheckProblem> problems;
};

/// Checks the deployment as given (HiSparse on or off as it says) for requests of at most `longest_prompt` prompt
/// tokens and `longest_request` prompt + output tokens (both 0: the start-up and allocation checks only).
PoolCheck check_pools(const Scenario& scenario, int64_t longest_prompt, int64_t longest_request);

/// The report: the engine version, each pool with its formula, the notes, then each problem (or "no problem").
std::string pool_check_text(const PoolCheck& check);

/// Throws hisparse::Error with every problem (named by `command` and the scenario) when there is one, but host pools
/// over host DRAM (pool "host DRAM"): plan warns of those and advise filters its settings by them.
void require_no_pool_problem(const PoolCheck& check, const Scenario& scenario, const std::string& command);

}  // namespace hisparse::sim
