// @brief compute_memory_budget (core/memory_budget.h): the scenario's model family (core/family/) sizes its pools;
// the budget remembers the family so that every later decision asks it rather than a name.
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "core/mla_memory_budget.h"
#include "core/pipeline_stages.h"

namespace hisparse {

MemoryBudget compute_memory_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  // Pipeline parallelism: every GPU holds one stage's layers, so the binding stage's model is what its pools see.
  if (s.deployment.decode.pp > 1) return pipeline_memory_budget(s, seq_lens);
  const ModelFamily& family = family_of(s);
  MemoryBudget b = family.budget(s, seq_lens);
  b.family = &family;
  b.attention = family.attention_label();
  return b;
}

}  // namespace hisparse
