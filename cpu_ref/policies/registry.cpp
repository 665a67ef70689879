// @brief The policy registration list.
#include "cpu_ref/policies/registry.h"

#include <cstdlib>

#include "core/error.h"
#include "core/hisparse_v2.h"

namespace hisparse::cpu_ref {

namespace {

/// A positive integer of a policy argument, or -1.
int32_t positive(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  const long v = std::strtol(text.c_str(), nullptr, 10);
  return v > 0 ? static_cast<int32_t>(v) : -1;
}

std::unique_ptr<SwapInPolicy> make_v2() { return make_hisparse_v2_policy(kHisparseV2PageSize); }
std::unique_ptr<SwapInPolicy> make_v2_with(const std::string& arg) {
  const int32_t page = positive(arg);
  if (page < 0) throw_error("swap-in policy hisparse-v2:{}: expected hisparse-v2:P with P a positive page size", arg);
  return make_hisparse_v2_policy(page);
}

constexpr int32_t kSetAssocWays = 32;  // SGLang #31341: 32 ways per shard
std::unique_ptr<SwapInPolicy> make_set_assoc() { return make_set_assoc_policy(0, kSetAssocWays); }
std::unique_ptr<SwapInPolicy> make_set_assoc_with(const std::string& arg) {
  const size_t x = arg.find('x');
  const int32_t shards = x == std::string::npos ? -1 : positive(arg.substr(0, x));
  const int32_t ways = x == std::string::npos ? -1 : positive(arg.substr(x + 1));
  if (shards < 0 || ways < 0)
    throw_error("swap-in policy set-assoc:{}: expected set-assoc:SxW with S shards and W ways (e.g. 256x32)", arg);
  return make_set_assoc_policy(shards, ways);
}

}  // namespace

const std::vector<PolicyEntry>& policy_registry() {
  static const std::vector<PolicyEntry> list = {
      {"sglang-lru", "the contract (docs/swap_in.md): LRU, misses take the least recently used slots",
       make_sglang_lru_policy},
      {"belady", "offline optimum: evict the slot whose token is next used furthest in the future", make_belady_policy},
      {"topk-only", "the buffer keeps only the previous step's top-k, no older history", make_topk_only_policy},
      {"fifo", "evict in load order; hits do not refresh", make_fifo_policy},
      {"lfu", "evict the least frequently used slot since its load (ties: least recently used)", make_lfu_policy},
      {"clock", "second chance: a hand sweeps the slots, clearing reference bits", make_clock_policy},
      {"hisparse-v2",
       "SGLang HiSparse V2 (PR #32314): the prompt's page-aligned prefix evicted to host, the rest resident on device; "
       "misses take empty slots, then stale ones, in slot order; H a power of two (hisparse-v2:P: page P, default 64)",
       make_v2, make_v2_with},
      {"set-assoc",
       "LRU shards (SGLang #31341): H/32 shards of 32 ways, each token hashed to one (set-assoc:SxW: S x W = H)",
       make_set_assoc, make_set_assoc_with},
  };
  return list;
}

std::unique_ptr<SwapInPolicy> make_policy(const std::string& name) {
  const size_t colon = name.find(':');
  const std::string base = name.substr(0, colon);
  std::string known;
  for (const auto& e : policy_registry()) {
    if (base == e.name) {
      if (colon == std::string::npos) return e.make();
      if (e.make_with) return e.make_with(name.substr(colon + 1));
      throw_error("swap-in policy '{}': {} takes no argument", name, e.name);
    }
    known += known.empty() ? "" : ", ";
    known += e.name;
  }
  throw_error("unknown swap-in policy '{}'; expected one of: {}", name, known);
}

}  // namespace hisparse::cpu_ref
