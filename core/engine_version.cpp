// @brief The engine versions of core/engine_version.h and the source of each rule.
//
// sglang-main: sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py at 6fde4f6f
//   (DefaultPoolConfigurator, the DSA branch of the cell size): indexer_ratio = host_to_device_ratio under
//   --enable-hisparse multiplies the indexer term; issue #30401 is closed, and the prompt cap taken as the full pool
//   (assumed: the fixing commit is not in the stored corpus).
// sglang-0.5.14: the environment of issue #30401 (lmsysorg/sglang:v0.5.14, 8 × H100, DeepSeek-V4-Flash, 512,000-token
//   prompts at concurrency 64): HiSparse decode capped the prompt at the sliding-window pool. Its indexer sizing is
//   taken as fixed (assumed: #30401 was filed after PR #28752).
// sglang-before-28752: the rule PR #28752 ("account for host_to_device_ratio in DSA indexer memory") replaced: the
//   pool allocated index_buf_size = size × host_to_device_ratio while the cell size budgeted the indexer at size × 1,
//   which over-estimated max_total_num_tokens and failed at start-up (OOM) for every ratio > 1, as its description
//   says.
#include "core/engine_version.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace hisparse {

namespace {

const std::vector<EngineVersionRules>& table() {
  static const std::vector<EngineVersionRules> t = {
      {"sglang-main", true, false,
       "sglang pool_configurator.py at 6fde4f6f (indexer × host_to_device_ratio, PR #28752); #30401 closed (prompt "
       "cap = full pool, assumed)"},
      {"sglang-0.5.14", true, true,
       "sglang issue #30401 (v0.5.14: HiSparse DeepSeek-V4 prompts capped at the sliding-window pool); indexer "
       "sizing as PR #28752 (assumed)"},
      {"sglang-before-28752", false, false,
       "sglang PR #28752 description: the indexer buffer was allocated × host_to_device_ratio but budgeted × 1"},
  };
  return t;
}

}  // namespace

std::vector<std::string> engine_version_names() {
  std::vector<std::string> names;
  for (const EngineVersionRules& r : table()) names.push_back(r.name);
  return names;
}

const EngineVersionRules& engine_version_rules(const std::string& name) {
  for (const EngineVersionRules& r : table())
    if (r.name == name) return r;
  throw_error("engine_version: got '{}', expected one of {}", name, fmt::join(engine_version_names(), ", "));
}

}  // namespace hisparse
