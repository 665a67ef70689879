// @brief The one capacity model (docs/capacity.md): for a scenario's memory budget, a context mix and a KV mode, every
// limit on the concurrent decode requests of a dp rank — the max_running_requests cap, HBM (the device pools), the
// logical pool, the host pool, host DRAM, PCIe within the TPOT SLO and the SLO itself — each with its formula, the
// binding one, and what a request of the mix holds. `hisparse plan` calls it once per length (a mix of one class),
// `hisparse advise` once per setting on the user's mix; fidelity and sweep read the plan's rows. A mix of one length
// prints exact per-length formulas (paged seq_len, buffer_slots); a mix of several prints the expected ones
// (E[paged seq_len]); both forms give the same counts for the same footprints (tests/sim/capacity).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/memory_budget.h"
#include "sim/capacity/capacity_limit.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/step/kv_mode.h"
#include "sim/cost/step/step_time_model.h"

namespace hisparse::sim {

struct CapacityOptions {
  double host_reserve_bytes = 0;  // per decode node: DRAM kept for the OS and the server process
  int64_t batch_cap = 65536;      // largest batch per rank the SLO and PCIe searches look at
  bool memory_only = false;       // `plan --limits memory`: PCIe and the SLO are not applied (their formulas say so)
  // SGLang allocates the host pools at start-up: with this set, a setting whose host pools exceed host DRAM less the
  // reserve gets host_dram 0 (the server would not start). The advisor sets it (it chooses among settings); the
  // planner reports the deployment as given and warns instead.
  bool host_pools_must_fit = false;
  bool calibrated_swap_in = false;  // the PCIe formula notes that the copy rate depends on B (cost.swap_in_cost)
};

struct Capacity {
  std::vector<CapacityLimit> limits;  // every key of limit_keys(), in that order
  std::string binding_limit;          // key of the limit that sets per_rank
  int64_t per_rank = 0;               // largest batch per dp rank meeting every limit
  // What one request of the mix holds, mean over the mix (bytes on the GPU holding it / in its host pool).
  double hbm_per_request = 0, host_per_request = 0;
  double misses_per_request_step = 0;  // rows loaded per request and step (all layers), mean over the mix
  // The pools the limits read (tokens; DeepSeek-V4's device and host pools in C4 entries).
  int64_t pool_tokens = 0;             // full: max_total_num_tokens; HiSparse: the device pool
  int64_t logical_pool_tokens = 0, host_pool_tokens = 0;
  double host_pool_bytes_per_node = 0;
  double host_dram_per_gpu = 0;        // (host DRAM − reserve) / GPUs per node
};

/// (host DRAM − reserve) / GPUs of the decode instance on one node (at least 1), 0 when the reserve takes it all.
double host_dram_per_gpu(const Scenario& scenario, double host_reserve_bytes);

/// Every limit of `mode` on `mix`. `budget` must be compute_memory_budget(scenario, L) with every length of the mix in
/// L; `model` the step-time model of the same scenario and mode (it sets the PCIe and SLO limits). Full KV on a model
/// without a sparse indexer is bounded by its own pools (MHA, sliding-window, Mamba); HiSparse's modes need an indexer.
Capacity capacity_limits(const Scenario& scenario, const MemoryBudget& budget, const ContextMix& mix, KvMode mode,
                         const StepTimeModel& model, const CapacityOptions& options);

}  // namespace hisparse::sim
