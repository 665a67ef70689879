// @brief apply_overrides (see scenario_overrides.h).
#include "sim/api/scenario_overrides.h"

#include <fmt/format.h>

#include "core/error.h"
#include "sim/api/settings_table.h"
#include "sim/cost/step/step_time_model.h"

namespace hisparse::sim {

namespace {

/// "<command>: --<flag> <value>: expected <what> (the flag replaces the deployment's <field>)": the flag is at fault,
/// not the deployment file, whose value it replaces (the file used to be named first, as if it held the bad value).
template <class T>
[[noreturn]] void bad(const std::string& command, const char* flag, const T& value, const Scenario& s,
                      const char* field, const char* expected) {
  throw_error("{}: --{} {}: expected {} (the flag replaces {}'s {})", command, flag, value, expected, s.deployment.name,
              field);
}

}  // namespace

std::string hbm_override_warning(const Scenario& s, bool from_flag) {
  const double given = s.deployment.memory.hbm_bytes, file = s.hardware.hbm_bytes;
  // 5 %: wider than any rounding of one figure between GB, GiB and MiB (at most 2^30 / 10^9 - 1 = 7.4 % is the
  // GB-for-GiB confusion itself, the mistake this catches; the H200's 141e9 against 143771 MiB is 6.5 %).
  constexpr double kTolerance = 0.05;
  if (!(given > 0) || !(file > 0) || given >= file * (1 - kTolerance)) return "";
  return fmt::format("{} {:.0f} B ({:.2f} GB = {:.2f} GiB) is {:.1f} % below hardware {}'s hbm_bytes {:.0f} B ({:.2f} GB "
                     "= {:.2f} GiB): every KV pool is sized from the smaller figure (GB = 10^9 B, GiB = 2^30 B; a "
                     "datasheet's round figure, such as the H200's \"141 GB\", is not the total CUDA reports, which "
                     "the hardware file holds)",
                     from_flag ? "--hbm-bytes" : fmt::format("{}: memory.hbm_bytes", s.source), given, given / 1e9,
                     given / 1073741824.0, 100 * (1 - given / file), s.hardware.name, file, file / 1e9,
                     file / 1073741824.0);
}

int32_t max_running_requests_per_rank(const Scenario& scenario, int32_t per_instance) {
  return per_instance / rank_layout(scenario).ranks;
}

void apply_overrides(const ScenarioOverrides& o, Scenario& s, const std::string& command) {
  // Every range is the settings table's (one check for the CLI, the field files and Python); what follows are the
  // checks that need the scenario.
  check_override_ranges(o, command, s.deployment.name);
  DeploymentSpec& d = s.deployment;
  if (o.device_buffer_size) d.hisparse.device_buffer_size = *o.device_buffer_size;
  if (o.host_to_device_ratio) d.hisparse.host_to_device_ratio = *o.host_to_device_ratio;
  if (o.top_k) d.hisparse.top_k = *o.top_k;
  d.hisparse.validate(command);
  if (o.mem_fraction_static) d.mem_fraction_static = *o.mem_fraction_static;
  if (o.page_size) d.page_size = *o.page_size;
  if (o.swap_in_kernel) d.swap_in_kernel = *o.swap_in_kernel;
  if (o.hisparse_prefetch) d.hisparse_prefetch = *o.hisparse_prefetch;
  if (o.kv_dtype) {
    // SGLang's own spellings of the same dtypes (--kv-cache-dtype fp8_e4m3, bfloat16): fp8 here is E4M3.
    const std::string v = *o.kv_dtype == "fp8_e4m3" ? "fp8" : *o.kv_dtype == "bfloat16" ? "bf16" : *o.kv_dtype;
    // NVFP4 rows exist only where the model publishes their size (DeepSeek-V4, SGLang PR #35237).
    if (v == "nvfp4" && s.model.latent_row_bytes_nvfp4 <= 0)
      bad(command, "kv-dtype", v, s, "kv_dtype", "bf16 or fp8 (the model publishes no latent_row_bytes_nvfp4)");
    d.kv_dtype = v == "fp8" ? KvDtype::kFp8 : v == "nvfp4" ? KvDtype::kNvfp4 : KvDtype::kBf16;
  }
  if (o.tpot_slo_ms) d.tpot_slo_ms = *o.tpot_slo_ms;
  if (o.mtp_draft_tokens) {
    if (*o.mtp_draft_tokens > 0 && s.model.mtp_layers == 0)
      bad(command, "mtp-draft-tokens", *o.mtp_draft_tokens, s, "mtp_draft_tokens",
          "0: the model has no MTP layer (mtp_layers 0) to draft with");
    d.mtp_draft_tokens = *o.mtp_draft_tokens;
  }
  if (o.mtp_acceptance) d.mtp_acceptance = *o.mtp_acceptance;
  if (o.max_running_requests) {
    const int32_t n = *o.max_running_requests;
    const int ranks = rank_layout(s).ranks;
    // SGLang hands each dp attention rank N // ranks; below one request per rank no rank could run anything.
    if (n > 0 && n < ranks)
      throw_error("{}: --max-running-requests {} is per instance and {} has {} dp attention ranks: each would run "
                  "{} // {} = 0 requests (expected 0 = no cap, or >= {})",
                  command, n, s.source, ranks, n, ranks, ranks);
    d.max_running_requests = max_running_requests_per_rank(s, n);
  }
  if (o.host_dram_bytes) d.host_dram_bytes = *o.host_dram_bytes;
  if (o.hbm_bytes) d.memory.hbm_bytes = *o.hbm_bytes;
  if (o.weight_bytes) d.memory.weight_bytes = *o.weight_bytes;
  if (o.weights_per_gpu_bytes) d.memory.weights_per_gpu_bytes = *o.weights_per_gpu_bytes;
  if (o.activation_reserve_bytes) d.activation_reserve_bytes = *o.activation_reserve_bytes;
  if (o.kv_budget_bytes) d.memory.kv_budget_bytes = *o.kv_budget_bytes;
  if (o.full_pool_tokens) d.memory.full_pool_tokens = *o.full_pool_tokens;
  if (o.device_pool_tokens) d.memory.device_pool_tokens = *o.device_pool_tokens;
  if (o.host_pool_tokens) d.memory.host_pool_tokens = *o.host_pool_tokens;
}

}  // namespace hisparse::sim
