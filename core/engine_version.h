// @brief The pool-sizing rules of the SGLang versions a deployment may name (`engine_version:`), each cited: whether
// the DSA indexer buffer is budgeted × host_to_device_ratio (PR #28752) and which pool caps a HiSparse DeepSeek-V4
// prompt (issue #30401). `hisparse check` reads them to say whether a configuration starts and its prompts fit.
#pragma once

#include <string>
#include <vector>

namespace hisparse {

struct EngineVersionRules {
  std::string name;
  // PR #28752: the HiSparse pool allocates the indexer buffer for size × host_to_device_ratio tokens. True: the
  // configurator budgets it so (cell = kv + ratio × indexer); false: it budgets it once, over-sizing the pool.
  bool indexer_budget_times_ratio = true;
  // Issue #30401: HiSparse DeepSeek-V4 decode capped the prompt length at the sliding-window pool instead of the
  // full (logical) pool.
  bool dsv4_prompt_capped_by_swa_pool = false;
  std::string source;  // where each rule is read (repository, file or PR / issue, commit)
};

/// The names engine_version accepts, in the order docs/capacity.md lists them.
std::vector<std::string> engine_version_names();
/// The rules of `name`; throws hisparse::Error naming the accepted names when it is unknown.
const EngineVersionRules& engine_version_rules(const std::string& name);

}  // namespace hisparse
