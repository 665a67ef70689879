// @brief compute_memory_budget's GQA / MHA branch (sliding-window hybrids, Double Sparsity, hybrid Mamba pools).
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_budget.h"

namespace hisparse {

/// The memory budget of a GQA / MHA model (ModelSpec::is_gqa()); compute_memory_budget calls it.
MemoryBudget compute_gqa_budget(const Scenario& scenario, const std::vector<int64_t>& seq_lens);

}  // namespace hisparse
