// @brief What several families share: the GQA pool arithmetic (K + V of the KV heads one GPU holds; the sliding,
// Mamba and Double Sparsity families differ only in how they are recognised) and the MLA latent pools (with or
// without DSA's indexer keys). A family file derives from one and adds its identity and what it offloads.
#pragma once

#include "core/budget_figure.h"
#include "core/family/model_family.h"
#include "core/gqa_memory_budget.h"
#include "core/mla_memory_budget.h"

namespace hisparse {

/// GQA / MHA pools (core/gqa_memory_budget.cpp), priced by the GQA layer terms.
class GqaPoolFamily : public ModelFamily {
 public:
  MemoryBudget budget(const Scenario& s, const std::vector<int64_t>& seq_lens) const override {
    return compute_gqa_budget(s, seq_lens);
  }
  std::vector<const Figure*> figures(const MemoryBudget& b) const override { return gqa_budget_figures(b); }
  int64_t kv_row_bytes(const Scenario& s) const override {
    return gqa_kv_row_bytes(s.model, s.deployment.kv_dtype, budget_detail::attention_tp_of(s.deployment.decode));
  }
  const char* kv_row_name() const override { return "kv_row"; }
  LayerPricing layer_pricing() const override { return LayerPricing::kGqaKv; }
  int attention_window(const ModelSpec& m) const override { return m.sliding_window; }
};

/// MLA latent pools (core/mla_memory_budget.cpp), priced by the MLA layer terms and SGLang's MLA op tables; plan
/// prints the HiSparse pool table rather than every figure.
class MlaPoolFamily : public ModelFamily {
 public:
  MemoryBudget budget(const Scenario& s, const std::vector<int64_t>& seq_lens) const override {
    return compute_mla_budget(s, seq_lens);
  }
  std::vector<const Figure*> figures(const MemoryBudget& b) const override { return mla_budget_figures(b); }
  int64_t kv_row_bytes(const Scenario& s) const override { return latent_row_bytes(s.model, s.deployment.kv_dtype); }
  const char* kv_row_name() const override { return "latent_row_bytes"; }
  bool lists_every_pool_figure() const override { return false; }
  LayerPricing layer_pricing() const override { return LayerPricing::kMlaLatent; }
  bool op_tables_apply() const override { return true; }
};

}  // namespace hisparse
