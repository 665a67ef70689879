// @brief The pools a simulated server admits requests into, sized as the capacity model sizes them (the memory
// budget's SGLang pools): `hisparse simulate`'s engine (sim/serving/) reads its token pools from here.
#pragma once

#include <cstdint>

#include "core/memory_budget.h"

namespace hisparse::sim {

/// Tokens per dp rank. Full KV: `logical` is max_total_num_tokens and no device or host pool is kept apart.
/// HiSparse: the device pool, the logical pool (device × host_to_device_ratio) and the host pool.
struct AdmissionPools {
  int64_t logical = 0, device = 0, host = 0;
};

/// The pools of `budget` in the engine's tokens: DeepSeek-V4's device and host pools count C4 entries, each holding
/// `tokens_per_entry` (4) tokens; 1 for token pools.
AdmissionPools admission_pools(const MemoryBudget& budget, bool hisparse, int tokens_per_entry);

}  // namespace hisparse::sim
