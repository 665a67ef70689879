// @brief The policy registration list.
#include "cpu_ref/policies/registry.h"

#include <cstdlib>

#include <fmt/format.h>

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

std::unique_ptr<SwapInPolicy> make_v2() {
  return make_hisparse_v2_policy(kHisparseV2PageSize, V2Coordinator::kCurrent);
}
std::unique_ptr<SwapInPolicy> make_v2_with(const std::string& arg) {
  const HisparseV2Spec spec = parse_hisparse_v2_arg(arg);
  return make_hisparse_v2_policy(spec.page, spec.rules);
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

V2Coordinator parse_v2_coordinator(const std::string& text, const std::string& where) {
  if (text == "current") return V2Coordinator::kCurrent;
  if (text == "older") return V2Coordinator::kOlder;
  throw_error("{}: '{}' is not a V2 coordinator; expected current (SGLang {}) or older (SGLang {})", where, text,
              kV2CurrentCommit, kV2OlderCommit);
}

const char* v2_coordinator_name(V2Coordinator rules) {
  return rules == V2Coordinator::kCurrent ? "current" : "older";
}

HisparseV2Spec parse_hisparse_v2_arg(const std::string& arg) {
  HisparseV2Spec spec;
  const size_t colon = arg.find(':');
  std::string page_text = arg.substr(0, colon), rules_text;
  if (colon != std::string::npos) {
    rules_text = arg.substr(colon + 1);
  } else if (!page_text.empty() && page_text.find_first_not_of("0123456789") != std::string::npos) {
    rules_text = page_text;  // "hisparse-v2:older"
    page_text.clear();
  }
  const std::string where = "swap-in policy hisparse-v2:" + arg;
  if (!page_text.empty() || colon != std::string::npos) {
    spec.page = positive(page_text);
    if (spec.page < 0)
      throw_error("{}: expected hisparse-v2:P, hisparse-v2:RULES or hisparse-v2:P:RULES with P a positive page size "
                  "and RULES current or older",
                  where);
  }
  if (!rules_text.empty() || colon != std::string::npos) {
    spec.rules = parse_v2_coordinator(rules_text, where);
    spec.rules_given = true;
  }
  return spec;
}

std::string with_v2_coordinator(const std::string& policy, V2Coordinator rules) {
  const size_t colon = policy.find(':');
  if (policy.substr(0, colon) != "hisparse-v2") return policy;
  const HisparseV2Spec spec =
      colon == std::string::npos ? HisparseV2Spec{} : parse_hisparse_v2_arg(policy.substr(colon + 1));
  if (spec.rules_given) return policy;
  return "hisparse-v2:" + std::to_string(spec.page) + ":" + v2_coordinator_name(rules);
}

void check_policy_top_k(const std::string& policy, int32_t top_k) {
  const size_t colon = policy.find(':');
  if (policy.substr(0, colon) != "hisparse-v2") return;
  const HisparseV2Spec spec =
      colon == std::string::npos ? HisparseV2Spec{} : parse_hisparse_v2_arg(policy.substr(colon + 1));
  if (v2_top_k_ok(top_k, spec.page)) return;
  int64_t fix = 1;  // the smallest power of two >= top_k and >= the page: a multiple of it when the page is a power of 2
  while (fix < top_k || fix < spec.page) fix *= 2;
  if (fix % spec.page != 0)
    throw_error("swap-in policy {}: page size {} is not a power of two, so no top_k is both a multiple of it and a "
                "power of two (HiSparse V2's rule); use a power-of-two page (hisparse-v2:P)",
                policy, spec.page);
  const bool pow2 = (top_k & (top_k - 1)) == 0;
  throw_error("swap-in policy {}: the trace's top_k {} cannot run under HiSparse V2, whose top_k must be a multiple "
              "of the page size {} (the coordinator asserts it) and a power of two (the plan kernel's "
              "tl.arange(0, TOPK)); {} is {}; record the trace with top_k {}{}",
              policy, top_k, spec.page, top_k, pow2 ? "not a multiple of the page" : "not a power of two", fix,
              pow2 ? fmt::format(" (or replay a page size dividing {}: hisparse-v2:P)", top_k) : std::string());
}

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
       "misses take empty slots, then stale ones, in slot order; H a power of two (hisparse-v2:P[:RULES]: page P, default "
       "64; RULES current (SGLang 09f8170, default) or older (ca0edd9), see --v2-coordinator)",
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
