// @brief Every command-line override of a deployment, typed and with its unit, and the one function that applies
// them: `plan`, `advise`, `simulate`, `replay --scenario`, `sweep` and the Python module all change a scenario only
// through here, so a flag means the same thing (and is checked the same way) in every command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/deployment_spec.h"

namespace hisparse::sim {

/// An unset field keeps the deployment YAML's value. Each field's range, unit, help, flag and YAML key are declared
/// once in sim/api/settings_table.cpp; a field added here needs its row there. Units are in the names; "per rank" is a dp attention rank,
/// "per instance" a decode server (all its ranks), as SGLang's flags of the same name.
struct ScenarioOverrides {
  // HiSparse settings (the advisor chooses the first two itself).
  std::optional<int32_t> device_buffer_size;    // H, device slots per request
  std::optional<int32_t> host_to_device_ratio;  // logical (host) pool = device pool × this
  std::optional<int32_t> top_k;
  /// Per instance, SGLang's --max-running-requests: each of the instance's dp attention ranks runs at most
  /// ⌊N / ranks⌋ (0 = no cap). Stored per rank in DeploymentSpec::max_running_requests.
  std::optional<int32_t> max_running_requests;
  // Server settings.
  std::optional<double> mem_fraction_static;  // in (0, 1]
  std::optional<int32_t> page_size;           // tokens
  std::optional<std::string> kv_dtype;        // bf16 | fp8 | nvfp4
  std::optional<std::string> swap_in_kernel;  // sglang | project: the kernel that prices the swap-in
  std::optional<bool> hisparse_prefetch;      // IndexShare prefetch (SGLang's default on; off = its env flag)
  std::optional<double> tpot_slo_ms;          // > 0
  std::optional<int32_t> mtp_draft_tokens;    // MTP draft tokens per step, 0..16 (0 = off)
  std::optional<double> mtp_acceptance;       // per-token acceptance, in [0, 1]
  // Memory, bytes.
  std::optional<double> host_dram_bytes;           // per decode node
  std::optional<double> host_reserve_bytes;        // per decode node, kept for the OS and the server (plan/advise)
  std::optional<double> hbm_bytes;                 // per GPU
  std::optional<double> weight_bytes;              // all weights
  std::optional<double> weights_per_gpu_bytes;     // per GPU
  std::optional<double> activation_reserve_bytes;  // per GPU
  std::optional<double> kv_budget_bytes;           // per GPU
  // SGLang pool sizes from a server log, tokens per GPU; 0 = derive from memory (as when the YAML leaves them out).
  std::optional<int64_t> full_pool_tokens;
  std::optional<int64_t> device_pool_tokens;
  std::optional<int64_t> host_pool_tokens;
};

/// Applies every set field of `o` to `scenario` and validates it. Errors say "<command>: --<flag> <value>", the
/// scenario file and what was expected, e.g. "plan: --page-size 0 (deployment scenarios/…/x.yaml: page_size,
/// expected >= 1)". host_reserve_bytes is not a deployment field: it is checked here and read by the caller.
void apply_overrides(const ScenarioOverrides& o, Scenario& scenario, const std::string& command);

/// A warning when the HBM the deployment runs with (--hbm-bytes, else the deployment's memory.hbm_bytes) is more than
/// 5 % below its hardware file's hbm_bytes, naming both: a datasheet's "141 GB" read as 141e9 B is 6.5 % below the
/// 143771 MiB an H200 reports, and every KV pool shrinks with it. Empty when the two agree or HBM is not overridden.
std::string hbm_override_warning(const Scenario& scenario, bool from_flag);

/// The per-rank cap for a per-instance --max-running-requests of `per_instance` on `scenario` (SGLang's
/// max_running_requests // dp_size under DP attention); 0 stays 0 (no cap).
int32_t max_running_requests_per_rank(const Scenario& scenario, int32_t per_instance);

}  // namespace hisparse::sim
