// @brief compute_memory_budget's GQA / MHA branch (sliding-window hybrids, Double Sparsity, hybrid Mamba pools).
#pragma once

#include <cstdint>
#include <vector>

#include "core/memory_budget.h"

namespace hisparse {

/// The memory budget of a GQA / MHA model (ModelSpec::is_gqa()); compute_memory_budget calls it.
MemoryBudget compute_gqa_budget(const Scenario& scenario, const std::vector<int64_t>& seq_lens);

/// One request's Mamba state in one linear-attention layer on one GPU of an attention-TP group of `atp` (SGLang's
/// MambaPool slot, core/gqa_memory_budget.cpp cites the shapes): what the budget sizes the Mamba pool by, and what the
/// step model reads and writes back each decode step (sim/cost/step/decode_cost_model_gqa.cpp).
struct MambaLayerState {
  int64_t conv_bytes = 0;    // conv state: (2 × key heads × key dim + value heads × value dim) / atp × (kernel − 1) bf16
  int64_t ssm_elements = 0;  // SSM state: value heads / atp × key dim × value dim values
  int64_t ssm_bytes = 0;     // those in fp32 (mamba_ssm_dtype default float32)
  int64_t bytes() const { return conv_bytes + ssm_bytes; }
};
MambaLayerState mamba_layer_state(const ModelSpec& model, int atp);

}  // namespace hisparse
