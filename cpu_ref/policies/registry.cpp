// @brief The policy registration list.
#include "cpu_ref/policies/registry.h"

#include "core/error.h"

namespace hisparse::cpu_ref {

const std::vector<PolicyEntry>& policy_registry() {
  static const std::vector<PolicyEntry> list = {
      {"sglang-lru", "the contract (docs/swap_in.md): LRU, misses take the least recently used slots",
       make_sglang_lru_policy},
      {"belady", "offline optimum: evict the slot whose token is next used furthest in the future", make_belady_policy},
      {"topk-only", "the buffer keeps only the previous step's top-k, no older history", make_topk_only_policy},
      {"fifo", "evict in load order; hits do not refresh", make_fifo_policy},
      {"lfu", "evict the least frequently used slot since its load (ties: least recently used)", make_lfu_policy},
      {"clock", "second chance: a hand sweeps the slots, clearing reference bits", make_clock_policy},
  };
  return list;
}

std::unique_ptr<SwapInPolicy> make_policy(const std::string& name) {
  std::string known;
  for (const auto& e : policy_registry()) {
    if (name == e.name) return e.make();
    known += known.empty() ? "" : ", ";
    known += e.name;
  }
  throw_error("unknown swap-in policy '{}'; expected one of: {}", name, known);
}

}  // namespace hisparse::cpu_ref
