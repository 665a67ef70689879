// @brief compute_memory_budget's MLA branch: MLA + DSA (latent and indexer keys; HiSparse applies) and plain MLA.
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_budget.h"

namespace hisparse {

/// The memory budget of an MLA model (neither GQA nor compressed); compute_memory_budget calls it.
MemoryBudget compute_mla_budget(const Scenario& scenario, const std::vector<int64_t>& seq_lens);

}  // namespace hisparse
