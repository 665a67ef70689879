// @brief compute_memory_budget (core/memory_budget.h): the model's family picks its pool arithmetic. The only file that
// includes every family's budget; the families include core/memory_budget.h's shared helpers and not each other.
#include "core/dsv4_pool_budget.h"
#include "core/gqa_memory_budget.h"
#include "core/memory_budget.h"
#include "core/mla_memory_budget.h"
#include "core/pipeline_stages.h"

namespace hisparse {

MemoryBudget compute_memory_budget(const Scenario& sc, const std::vector<int64_t>& seq_lens) {
  // Pipeline parallelism: every GPU holds one stage's layers, so the binding stage's model is what its pools see.
  if (sc.deployment.decode.pp > 1) return pipeline_memory_budget(sc, seq_lens);
  const Scenario& s = sc;
  if (s.model.is_gqa()) return compute_gqa_budget(s, seq_lens);
  // A compressed-attention cache entry covers 4 or 128 tokens and lives in one of five pools: the DSV4 pool
  // arithmetic sizes them (core/dsv4_pool_budget.h), with HiSparse on and off.
  if (s.model.is_compressed()) return dsv4_memory_budget(s, seq_lens);
  return compute_mla_budget(s, seq_lens);
}

}  // namespace hisparse
