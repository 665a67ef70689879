// @brief The explicit list of swap-in policies, chosen by name (no static self-registration).
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// One factory per policy file.
std::unique_ptr<SwapInPolicy> make_sglang_lru_policy();
std::unique_ptr<SwapInPolicy> make_belady_policy();
std::unique_ptr<SwapInPolicy> make_topk_only_policy();
std::unique_ptr<SwapInPolicy> make_fifo_policy();
std::unique_ptr<SwapInPolicy> make_lfu_policy();
std::unique_ptr<SwapInPolicy> make_clock_policy();
std::unique_ptr<SwapInPolicy> make_hisparse_v2_policy(int32_t page);
std::unique_ptr<SwapInPolicy> make_set_assoc_policy(int32_t shards, int32_t ways);  // shards 0: H / ways

}  // namespace hisparse::cpu_ref
