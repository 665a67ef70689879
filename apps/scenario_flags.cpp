// @brief The shared override flags (see scenario_flags.h).
#include "apps/scenario_flags.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::apps {

namespace po = boost::program_options;

namespace {

/// A byte-size flag's help: what it is, then the units it takes with their meaning (GB = 10^9 B, GiB = 2^30 B).
std::string bytes_help(const std::string& what) { return fmt::format("{}; bytes: {}", what, kByteUnitsHelp); }

}  // namespace

void add_scenario_flags(po::options_description& out, unsigned groups, const std::vector<std::string>& except) {
  po::options_description desc;
  auto add = desc.add_options();
  if (groups & kSettingFlags)
    add("device-buffer-size", po::value<int>(), "HiSparse device_buffer_size H: device slots per request (replaces "
        "the deployment's)")(
        "host-to-device-ratio", po::value<int>(), "HiSparse host_to_device_ratio: logical (host) pool = device pool × "
        "this (replaces the deployment's)")(
        "max-running-requests", po::value<int>(), "per instance, as SGLang's --max-running-requests: each of the "
        "instance's dp attention ranks runs at most ⌊N / ranks⌋ (SGLang's TpModelWorker divides it by dp_size under "
        "--enable-dp-attention); 0 = no cap");
  if (groups & kDeploymentFlags)
    add("top-k", po::value<int>(), "HiSparse top_k (replaces the deployment's)")(
        "mem-fraction-static", po::value<double>(), "SGLang --mem-fraction-static, per GPU, in (0, 1]")(
        "page-size", po::value<int>(), "KV page size, tokens")(
        "kv-dtype", po::value<std::string>(), "KV cache dtype: bf16 | fp8 | nvfp4 (models with an NVFP4 row: DeepSeek-V4)")(
        "tpot-slo-ms", po::value<double>(), "TPOT SLO, ms per output token (replaces the deployment's)")(
        "mtp-draft-tokens", po::value<int>(), "speculative decoding with the model's MTP layer: d draft tokens per "
        "step (SGLang --speculative-num-steps d, eagle-topk 1; 0 = off; replaces the deployment's mtp_draft_tokens)")(
        "mtp-acceptance", po::value<double>(), "MTP: probability a draft token is accepted given its predecessors were, "
        "in [0, 1]; accepted tokens per step = 1 + a + ... + a^d (replaces the deployment's mtp_acceptance)")(
        "host-dram-bytes", po::value<std::string>(), bytes_help("host DRAM per decode node").c_str())(
        "hbm-bytes", po::value<std::string>(), bytes_help("HBM per GPU (replaces the hardware's; more than 5 % below the hardware file's is warned about: NVIDIA's \"141 GB\" H200 holds 143771MiB = 150.75GB)").c_str())(
        "weight-bytes", po::value<std::string>(), bytes_help("all weights of the model (replaces the model's)").c_str())(
        "weights-per-gpu-bytes", po::value<std::string>(), bytes_help("weights per GPU (replaces the sharding arithmetic)").c_str())(
        "activation-reserve-bytes", po::value<std::string>(), bytes_help("activation / CUDA-graph reserve per GPU").c_str())(
        "kv-budget-bytes", po::value<std::string>(), bytes_help("HBM for KV per GPU (replaces HBM × mem_fraction_static − weights − reserve)").c_str())(
        "full-pool-tokens", po::value<int64_t>(), "per GPU (dp rank): max_total_num_tokens without HiSparse, from a "
        "server log (0 = derive from memory)")(
        "device-pool-tokens", po::value<int64_t>(), "per GPU (dp rank): max_total_num_tokens with HiSparse, from a "
        "server log (0 = derive from memory)")(
        "host-pool-tokens", po::value<int64_t>(), "per GPU (dp rank): host pool tokens (0 = derive from memory)");
  if (groups & kHostReserveFlag)
    add("host-reserve-bytes", po::value<std::string>(), bytes_help("host DRAM per decode node kept for the OS and the server (default 0)").c_str());
  if (groups & kCostFlags)
    add("cost-params", po::value<std::string>()->default_value("auto"),
        "cost-model terms YAML (efficiencies, latencies, overheads, each with its source): auto (the hardware file's "
        "cost_model) or a path")(
        "calibration", po::value<std::string>()->default_value("auto"),
        "PCIe and swap-in copy calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse "
        "bench --calibrate`")(
        "step-calibration", po::value<std::string>()->default_value("auto"),
        "per-op decode-layer calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench "
        "step --fit`")(
        "attention-table", po::value<std::string>()->default_value("auto"),
        "measured FlashMLA sparse-attention times: auto (the hardware file's attention_table, or the table it carries "
        "over with attention_table_from), none (the roofline at efficiency.attention), or a CSV path")(
        "op-tables", po::value<std::string>()->default_value("auto"),
        "the engine's kernels timed per GPU (DeepGEMM, FlashMLA, DeepEP, NCCL, SGLang's): auto (the tables of "
        "scenarios/measurements/engine_ops.yaml measured on the deployment's hardware, SGLang deployments), none "
        "(every term modelled as without tables), or an index YAML")(
        "swap-in-kernel", po::value<std::string>(),
        "whose swap-in kernel prices the plan and miss copy: sglang (SGLang's, the hardware's "
        "sglang_swap_in_calibration) | project (this project's, the hardware's calibration); default: the "
        "deployment's swap_in_kernel, else its engine's (sglang)")(
        "overlap", po::value<std::string>(), groups & kOverlapBoth
                                                 ? "none | two-batch | both (each in turn; default: the cost parameters')"
                                                 : "none | two-batch (default: the cost parameters')");
  if (groups & kMissFlags)
    add("miss-curve", po::value<std::string>(), "miss surface: scenarios/miss_models/<name>.yaml or a .yaml path "
        "(written by `hisparse fit-miss-model`; default smollm2-real below top_k 1024, gemma3-270m-field from 1024 on); with a trace, used where it measured nothing")(
        "miss-fraction", po::value<double>(), "a constant per-layer miss fraction of K once n > H, in [0, 1], instead "
        "of the surface");
  if (groups & kTraceMissFlags)
    add("trace", po::value<std::string>(), "top-k trace replayed at every buffer size: its measured misses replace "
        "the model's where it has data")(
        "policy", po::value<std::string>()->default_value("sglang-lru"), "swap-in policy of the replay and the surface")(
        "threads", po::value<int>()->default_value(1), "replay threads for --trace")(
        "rescale-trace-top-k", "accept a --trace whose top_k differs from the scenario's: replay it at the same H/K "
        "and apply its fractions by n/H");
  for (const auto& o : desc.options())
    if (std::find(except.begin(), except.end(), o->long_name()) == except.end()) out.add(o);
}

namespace {

template <class T>
std::optional<T> opt(const po::variables_map& vm, const char* flag) {
  if (!vm.count(flag)) return std::nullopt;
  return vm[flag].as<T>();
}

std::optional<double> bytes(const po::variables_map& vm, const char* flag, const std::string& command) {
  if (!vm.count(flag)) return std::nullopt;
  return parse_byte_size(vm[flag].as<std::string>(), fmt::format("{}: --{}", command, flag));
}

}  // namespace

sim::ScenarioChoice scenario_choice(const po::variables_map& all, const std::string& scenario, const std::string& command,
                                    const std::vector<std::string>& except) {
  po::variables_map vm = all;
  for (const auto& name : except) vm.erase(name);
  sim::ScenarioChoice c;
  c.scenario = scenario;
  sim::ScenarioOverrides& o = c.overrides;
  o.device_buffer_size = opt<int>(vm, "device-buffer-size");
  o.host_to_device_ratio = opt<int>(vm, "host-to-device-ratio");
  o.max_running_requests = opt<int>(vm, "max-running-requests");
  o.top_k = opt<int>(vm, "top-k");
  o.mem_fraction_static = opt<double>(vm, "mem-fraction-static");
  o.page_size = opt<int>(vm, "page-size");
  o.kv_dtype = opt<std::string>(vm, "kv-dtype");
  o.tpot_slo_ms = opt<double>(vm, "tpot-slo-ms");
  o.mtp_draft_tokens = opt<int>(vm, "mtp-draft-tokens");
  o.mtp_acceptance = opt<double>(vm, "mtp-acceptance");
  o.host_dram_bytes = bytes(vm, "host-dram-bytes", command);
  o.host_reserve_bytes = bytes(vm, "host-reserve-bytes", command);
  o.hbm_bytes = bytes(vm, "hbm-bytes", command);
  o.weight_bytes = bytes(vm, "weight-bytes", command);
  o.weights_per_gpu_bytes = bytes(vm, "weights-per-gpu-bytes", command);
  o.activation_reserve_bytes = bytes(vm, "activation-reserve-bytes", command);
  o.kv_budget_bytes = bytes(vm, "kv-budget-bytes", command);
  o.full_pool_tokens = opt<int64_t>(vm, "full-pool-tokens");
  o.device_pool_tokens = opt<int64_t>(vm, "device-pool-tokens");
  o.host_pool_tokens = opt<int64_t>(vm, "host-pool-tokens");
  if (vm.count("cost-params")) c.cost_params = vm["cost-params"].as<std::string>();
  if (vm.count("calibration")) c.calibration = vm["calibration"].as<std::string>();
  if (vm.count("step-calibration")) c.step_calibration = vm["step-calibration"].as<std::string>();
  if (vm.count("attention-table")) c.attention_table = vm["attention-table"].as<std::string>();
  if (vm.count("op-tables")) c.op_tables = vm["op-tables"].as<std::string>();
  o.swap_in_kernel = opt<std::string>(vm, "swap-in-kernel");
  // `both` is simulate's to expand; every other value is one mode.
  if (vm.count("overlap") && vm["overlap"].as<std::string>() != "both")
    c.overlap = sim::parse_overlap_mode(vm["overlap"].as<std::string>(), "--overlap");
  return c;
}

sim::MissChoice miss_choice(const po::variables_map& vm, bool with_trace) {
  sim::MissChoice m;
  if (vm.count("miss-curve")) m.surface = vm["miss-curve"].as<std::string>();
  m.fraction = opt<double>(vm, "miss-fraction");
  m.rescale_trace_top_k = vm.count("rescale-trace-top-k") > 0;
  if (!with_trace) return m;
  if (vm.count("trace")) m.trace = vm["trace"].as<std::string>();
  if (vm.count("policy")) m.policy = vm["policy"].as<std::string>();
  if (vm.count("threads")) m.threads = vm["threads"].as<int>();
  return m;
}

}  // namespace hisparse::apps
