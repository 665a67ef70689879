// @brief The explicit list of swap-in policies, chosen by name (no static self-registration).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/hisparse_v2.h"
#include "cpu_ref/policies/policy.h"

namespace hisparse::cpu_ref {

struct PolicyEntry {
  const char* name;
  const char* summary;
  std::unique_ptr<SwapInPolicy> (*make)();
  /// Policies with a parameter also take "name:ARG" (ARG as the summary says); nullptr for the others.
  std::unique_ptr<SwapInPolicy> (*make_with)(const std::string& arg) = nullptr;
};

/// Every policy, the contract (sglang-lru) first.
const std::vector<PolicyEntry>& policy_registry();

/// Creates a policy by name ("name" or "name:ARG"); throws hisparse::Error listing the known names otherwise.
std::unique_ptr<SwapInPolicy> make_policy(const std::string& name);

/// hisparse-v2's argument "P", "RULES" or "P:RULES" (P a positive page, RULES current|older; defaults 64, current).
struct HisparseV2Spec {
  int32_t page = kHisparseV2PageSize;
  V2Coordinator rules = V2Coordinator::kCurrent;
  bool rules_given = false;  // the argument named RULES
};
/// Parses the text after "hisparse-v2:"; throws hisparse::Error naming the argument and the accepted forms.
HisparseV2Spec parse_hisparse_v2_arg(const std::string& arg);

/// "current" / "older" as V2Coordinator; throws hisparse::Error naming `where`, the value and the choices.
V2Coordinator parse_v2_coordinator(const std::string& text, const std::string& where);
const char* v2_coordinator_name(V2Coordinator rules);

/// `policy` with V2 rules `rules` when it is hisparse-v2 without rules of its own, else `policy` unchanged (replay's
/// --v2-coordinator: the policy's printed name stays the one the user gave).
std::string with_v2_coordinator(const std::string& policy, V2Coordinator rules);

/// Refuses a trace top_k that `policy`'s kernel cannot run (hisparse-v2: a power of two and a multiple of the page,
/// core/hisparse_v2.h v2_top_k_ok); the message names the rule, the value and the fix. No-op for other policies.
void check_policy_top_k(const std::string& policy, int32_t top_k);

// One factory per policy file.
std::unique_ptr<SwapInPolicy> make_sglang_lru_policy();
std::unique_ptr<SwapInPolicy> make_belady_policy();
std::unique_ptr<SwapInPolicy> make_topk_only_policy();
std::unique_ptr<SwapInPolicy> make_fifo_policy();
std::unique_ptr<SwapInPolicy> make_lfu_policy();
std::unique_ptr<SwapInPolicy> make_clock_policy();
std::unique_ptr<SwapInPolicy> make_hisparse_v2_policy(int32_t page, V2Coordinator rules);
std::unique_ptr<SwapInPolicy> make_set_assoc_policy(int32_t shards, int32_t ways);  // shards 0: H / ways

}  // namespace hisparse::cpu_ref
