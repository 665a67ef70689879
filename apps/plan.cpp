// @brief `hisparse plan --scenario S`: the capacity-planning report (docs/capacity.md) — full KV vs HiSparse per
// sequence length, every SGLang pool size, the binding limit, throughput against batch size, and the buffer / ratio
// sweeps — written as plan.json, plan.md, plan.html and PNG plots (scripts/plot_plan.py).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/plot_script.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/miss/miss_surface.h"
#include "core/io/output_file.h"
#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"
#include "sim/workload/workload.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

std::vector<int32_t> to_i32(const std::vector<int64_t>& v, const char* flag) {
  std::vector<int32_t> out;
  for (int64_t x : v) {
    if (x > (1LL << 30)) throw_error("plan: {}: {} is too large", flag, x);
    out.push_back(static_cast<int32_t>(x));
  }
  std::sort(out.begin(), out.end());
  return out;
}

double parse_bytes(const std::string& text, const char* flag) {
  double v = 0;
  if (!parse_quantity(text, Unit::kBytes, &v) || v < 0)
    throw_error("plan: {} '{}' is not a byte size (expected e.g. 1TiB, 141e9, 93.5GB)", flag, text);
  return v;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int64_t quantile(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

int run_plan(int argc, char** argv) {
  std::string scenario_name, seq_text, workload_name, trace_path, policy = "sglang-lru", out_dir = "plan_out";
  std::string miss_curve = sim::kDefaultMissSurface;
  std::string sweep_h_text, sweep_r_text, cost_path, overlap_text, calibration_path, step_calibration_path;
  std::string host_dram_text, host_reserve_text, hbm_text, weight_text, weights_gpu_text, kv_budget_text, reserve_text;
  int threads = 1;
  po::options_description desc(
      "hisparse plan --scenario S [--seq-lens 16384,32768,65536,131072] [--workload W] [--trace T] [--out DIR]\n\n"
      "Capacity plan of a decode deployment, full KV vs HiSparse: HBM and host memory per request, every SGLang pool\n"
      "size, the largest concurrency under each limit (HBM, pools, host DRAM, PCIe within the TPOT SLO, the SLO) and\n"
      "which binds, decode throughput against batch size, sweeps of device_buffer_size and host_to_device_ratio.\n"
      "Writes DIR/plan.json, plan.md, plan.html and plan_*.png.\n\noptions");
  desc.add_options()("help,h", "this help")(
      "scenario", po::value(&scenario_name)->required(), "deployment name (scenarios/deployments) or YAML path")(
      "seq-lens", po::value(&seq_text), "sequence lengths, comma-separated (default 16384,32768,65536,131072, or the "
      "workload's p50,p90,p99,max of input + output with --workload)")(
      "workload", po::value(&workload_name), "workload name / YAML / trace file whose request lengths set the sequence lengths")(
      "trace", po::value(&trace_path), "top-k trace: misses come from replaying it at every buffer size (else the "
      "miss surface --miss-curve)")(
      "rescale-trace-top-k", "--trace recorded at another top_k: replay it at the same H/K and apply its fractions by "
      "n/H (else that is an error)")(
      "miss-curve", po::value(&miss_curve)->default_value(miss_curve), "miss surface: scenarios/miss_models/<name>.yaml "
      "or a .yaml path (written by `hisparse fit-miss-model`); evaluated at every buffer size")(
      "policy", po::value(&policy)->default_value(policy), "swap-in policy for --trace replay and the miss surface")(
      "threads", po::value(&threads)->default_value(1), "replay threads for --trace")(
      "out,o", po::value(&out_dir)->default_value(out_dir), "output directory")(
      "no-plots", "skip scripts/plot_plan.py (the reports say the plots are missing)")(
      "device-buffer-size", po::value<int>(), "HiSparse H (device slots per request)")(
      "host-to-device-ratio", po::value<int>(), "logical / host pool = device pool × this")(
      "top-k", po::value<int>(), "HiSparse top_k")(
      "mem-fraction-static", po::value<double>(), "SGLang --mem-fraction-static")(
      "page-size", po::value<int>(), "KV page size in tokens")(
      "kv-dtype", po::value<std::string>(), "bf16 | fp8")(
      "tpot-slo-ms", po::value<double>(), "TPOT SLO (ms)")(
      "max-running-requests", po::value<int>(), "per dp rank cap (0 = none)")(
      "host-dram-bytes", po::value(&host_dram_text), "host DRAM per decode node (e.g. 1TiB)")(
      "host-reserve-bytes", po::value(&host_reserve_text), "host DRAM per node kept for the OS and server (default 0)")(
      "hbm-bytes", po::value(&hbm_text), "override: HBM per GPU")(
      "weight-bytes", po::value(&weight_text), "override: all weights")(
      "weights-per-gpu-bytes", po::value(&weights_gpu_text), "override: weights per GPU")(
      "activation-reserve-bytes", po::value(&reserve_text), "override: activation / graph reserve per GPU")(
      "kv-budget-bytes", po::value(&kv_budget_text), "override: HBM for KV per GPU")(
      "full-pool-tokens", po::value<int64_t>(), "override: max_total_num_tokens without HiSparse (from a server log)")(
      "device-pool-tokens", po::value<int64_t>(), "override: max_total_num_tokens with HiSparse (from a server log)")(
      "host-pool-tokens", po::value<int64_t>(), "override: host pool tokens per GPU")(
      "cost-params", po::value(&cost_path)->default_value("auto"),
      "cost-model terms YAML (efficiencies, latencies, overheads, each with its source): auto (the hardware file's "
      "cost_model) or a path")(
      "calibration", po::value(&calibration_path)->default_value("auto"),
      "PCIe and swap-in copy calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench "
      "--calibrate`")(
      "step-calibration", po::value(&step_calibration_path)->default_value("auto"),
      "per-op decode-layer calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench step "
      "--fit`")(
      "overlap", po::value(&overlap_text), "none | two-batch (default: the cost parameters')")(
      "miss-fraction", po::value<double>(), "constant per-layer miss fraction of slow-path steps at every buffer size")(
      "sweep-buffer-sizes", po::value(&sweep_h_text), "device_buffer_size sweep (default top_k × 1, 1.5, 2, 3, 4, 6, 8)")(
      "sweep-ratios", po::value(&sweep_r_text), "host_to_device_ratio sweep (default 1,2,3,4,5,6,8,10,12,16,20)")(
      "batch-cap", po::value<int64_t>(), "largest batch per rank considered (default 65536)")(
      "strategies", "add the cache-strategy comparison (full KV, HiSparse, physical eviction, logical masking, hybrid "
      "compression) to stdout, plan.md/html and plan.json (docs/capacity.md, \"Cache strategies\")")(
      "eviction-budget", po::value<int64_t>(), "--strategies: tokens kept per request by physical eviction (default: top_k)")(
      "compression-ratio", po::value<double>(), "--strategies: hybrid compression ratio c of the compressed rows (default 4, >= 1)")(
      "compression-sinks", po::value<int64_t>(), "--strategies: full-precision sink tokens (default 4)")(
      "compression-recent", po::value<int64_t>(), "--strategies: full-precision recent tokens (default 256)")(
      "reconstruct-bytes", po::value<double>(), "--strategies: HBM bytes of reconstruction work per compressed row attended "
      "per layer (default, assumed: row / c + row)")(
      "recall-from", po::value<std::string>(), "--strategies: select.json of `hisparse select` for the recall column "
      "(without it recall is \"not measured\")")(
      "recall-top-k", po::value<int64_t>(), "--strategies: read the recall at this K of the select file (default: top_k; "
      "E for eviction)")(
      "limits", po::value<std::string>()->default_value("all"),
      "all | memory: with memory, only the max_running_requests cap and memory (HBM, pools, host DRAM) limit "
      "concurrency — the memory-only capacity question; PCIe and the TPOT SLO are reported, not applied");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      fmt::print("{}\n", (std::ostringstream() << desc).str());
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw_error("{}", e.what());
  }
  std::string command_line = "hisparse";
  for (int i = 0; i < argc; ++i) command_line += std::string(" ") + (i == 0 ? "plan" : argv[i]);

  Scenario s = load_scenario(scenario_name);
  DeploymentSpec& d = s.deployment;
  if (vm.count("device-buffer-size")) d.hisparse.device_buffer_size = vm["device-buffer-size"].as<int>();
  if (vm.count("host-to-device-ratio")) d.hisparse.host_to_device_ratio = vm["host-to-device-ratio"].as<int>();
  if (vm.count("top-k")) d.hisparse.top_k = vm["top-k"].as<int>();
  d.hisparse.validate("plan: --device-buffer-size / --host-to-device-ratio / --top-k");
  if (vm.count("mem-fraction-static")) {
    d.mem_fraction_static = vm["mem-fraction-static"].as<double>();
    if (!(d.mem_fraction_static > 0 && d.mem_fraction_static <= 1))
      throw_error("plan: --mem-fraction-static {} (expected in (0, 1])", d.mem_fraction_static);
  }
  if (vm.count("page-size")) {
    d.page_size = vm["page-size"].as<int>();
    if (d.page_size < 1) throw_error("plan: --page-size {} (expected >= 1)", d.page_size);
  }
  if (vm.count("kv-dtype")) {
    const std::string t = vm["kv-dtype"].as<std::string>();
    if (t != "bf16" && t != "fp8") throw_error("plan: --kv-dtype '{}' (expected bf16 or fp8)", t);
    d.kv_dtype = t == "fp8" ? KvDtype::kFp8 : KvDtype::kBf16;
  }
  if (vm.count("tpot-slo-ms")) d.tpot_slo_ms = vm["tpot-slo-ms"].as<double>();
  if (vm.count("max-running-requests")) d.max_running_requests = vm["max-running-requests"].as<int>();
  if (d.max_running_requests < 0) throw_error("plan: --max-running-requests {} (expected >= 0)", d.max_running_requests);
  if (!host_dram_text.empty()) d.host_dram_bytes = parse_bytes(host_dram_text, "--host-dram-bytes");
  if (!hbm_text.empty()) d.memory.hbm_bytes = parse_bytes(hbm_text, "--hbm-bytes");
  if (!weight_text.empty()) d.memory.weight_bytes = parse_bytes(weight_text, "--weight-bytes");
  if (!weights_gpu_text.empty()) d.memory.weights_per_gpu_bytes = parse_bytes(weights_gpu_text, "--weights-per-gpu-bytes");
  if (!reserve_text.empty()) d.activation_reserve_bytes = parse_bytes(reserve_text, "--activation-reserve-bytes");
  if (!kv_budget_text.empty()) d.memory.kv_budget_bytes = parse_bytes(kv_budget_text, "--kv-budget-bytes");
  auto tokens = [&](const char* flag, int64_t* dst) {
    if (!vm.count(flag)) return;
    *dst = vm[flag].as<int64_t>();
    if (*dst < 1) throw_error("plan: --{} {} (expected >= 1)", flag, *dst);
  };
  tokens("full-pool-tokens", &d.memory.full_pool_tokens);
  tokens("device-pool-tokens", &d.memory.device_pool_tokens);
  tokens("host-pool-tokens", &d.memory.host_pool_tokens);

  sim::PlanOptions opt;
  const std::string terms_line = sim::load_cost_terms(cost_path, s, &opt.cost);
  const std::string calibration_line =
      terms_line + "; " + sim::apply_calibrations(calibration_path, step_calibration_path, &s, &opt.cost);
  if (!overlap_text.empty()) opt.cost.overlap = sim::parse_overlap_mode(overlap_text, "--overlap");
  if (!host_reserve_text.empty()) opt.host_reserve_bytes = parse_bytes(host_reserve_text, "--host-reserve-bytes");
  if (vm.count("batch-cap")) opt.batch_cap = vm["batch-cap"].as<int64_t>();
  const std::string limits = vm["limits"].as<std::string>();
  if (limits != "all" && limits != "memory") throw_error("plan: --limits '{}' (expected all or memory)", limits);
  opt.memory_only = limits == "memory";
  opt.strategies.enabled = vm.count("strategies") > 0;
  for (const char* f : {"eviction-budget", "compression-ratio", "compression-sinks", "compression-recent",
                        "reconstruct-bytes", "recall-from", "recall-top-k"})
    if (vm.count(f) && !opt.strategies.enabled) throw_error("plan: --{} needs --strategies", f);
  if (vm.count("eviction-budget")) {
    opt.strategies.eviction_budget = vm["eviction-budget"].as<int64_t>();
    if (opt.strategies.eviction_budget < 1) throw_error("plan: --eviction-budget {} (expected >= 1)", opt.strategies.eviction_budget);
  }
  if (vm.count("compression-ratio")) opt.strategies.compression_ratio = vm["compression-ratio"].as<double>();
  if (vm.count("compression-sinks")) opt.strategies.compression_sinks = vm["compression-sinks"].as<int64_t>();
  if (vm.count("compression-recent")) opt.strategies.compression_recent = vm["compression-recent"].as<int64_t>();
  if (vm.count("reconstruct-bytes")) {
    opt.strategies.reconstruct_bytes = vm["reconstruct-bytes"].as<double>();
    if (!(opt.strategies.reconstruct_bytes >= 0))
      throw_error("plan: --reconstruct-bytes {} (expected >= 0)", opt.strategies.reconstruct_bytes);
  }
  if (vm.count("recall-top-k")) {
    opt.strategies.recall_top_k = vm["recall-top-k"].as<int64_t>();
    if (opt.strategies.recall_top_k < 1) throw_error("plan: --recall-top-k {} (expected >= 1)", opt.strategies.recall_top_k);
  }
  if (vm.count("recall-from")) {
    opt.strategies.recall_file = vm["recall-from"].as<std::string>();
    if (!fs::is_regular_file(opt.strategies.recall_file))
      throw_error("plan: --recall-from {}: no such file", opt.strategies.recall_file);
    opt.strategies.recall_json = read_file(opt.strategies.recall_file);
    if (opt.strategies.recall_json.empty()) throw_error("plan: --recall-from {}: empty or unreadable", opt.strategies.recall_file);
  }
  if (!sweep_h_text.empty())
    opt.sweep_buffer_sizes = to_i32(parse_count_list(sweep_h_text, "plan", "--sweep-buffer-sizes", 1, int64_t{1} << 30,
                                                     "2048,4096,8K"), "--sweep-buffer-sizes");
  if (!sweep_r_text.empty())
    opt.sweep_ratios = to_i32(parse_count_list(sweep_r_text, "plan", "--sweep-ratios", 1, 1 << 20, "2,5,10"), "--sweep-ratios");

  sim::PlanRunInfo info;
  info.command_line = command_line;
  info.calibration = calibration_line;
  if (!seq_text.empty())
    opt.seq_lens = parse_count_list(seq_text, "plan", "--seq-lens", 1, int64_t{1} << 30, "16K,32K,131072");
  if (!workload_name.empty()) {
    const sim::Workload w = sim::load_workload(workload_name);
    if (w.requests.empty()) throw_error("plan: workload {} holds no request", workload_name);
    std::vector<int64_t> total, in, out;
    for (const auto& r : w.requests) {
      in.push_back(r.input_tokens);
      out.push_back(r.output_tokens);
      total.push_back(int64_t{r.input_tokens} + r.output_tokens);
    }
    const int64_t p50 = quantile(total, 0.5), p90 = quantile(total, 0.9), p99 = quantile(total, 0.99),
                  mx = quantile(total, 1.0);
    info.workload = fmt::format("{} ({}): {} requests; input p50 {} / p99 {}; output p50 {} / p99 {}; input + output "
                                "p50 {} / p90 {} / p99 {} / max {}",
                                w.name, w.source, w.requests.size(), quantile(in, 0.5), quantile(in, 0.99),
                                quantile(out, 0.5), quantile(out, 0.99), p50, p90, p99, mx);
    if (seq_text.empty()) {
      opt.seq_lens.clear();
      for (int64_t v : {p50, p90, p99, mx}) {
        const int64_t paged = round_up_to_page(std::max<int64_t>(v, 1), d.page_size);
        if (std::find(opt.seq_lens.begin(), opt.seq_lens.end(), paged) == opt.seq_lens.end()) opt.seq_lens.push_back(paged);
      }
      info.workload += " → planned at p50, p90, p99, max (rounded up to pages)";
    }
  }

  if (!s.model.has_sparse_indexer() && !trace_path.empty())
    throw_error("plan: --trace {}: model {} has no sparse indexer, so no top-k trace drives its cache (HiSparse is not "
                "applicable)", trace_path, s.model.name);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> hs = opt.sweep_buffer_sizes.empty() ? sim::default_buffer_sweep(s) : opt.sweep_buffer_sizes;
  hs.push_back(d.hisparse.device_buffer_size);
  std::sort(hs.begin(), hs.end());
  hs.erase(std::unique(hs.begin(), hs.end()), hs.end());
  // The surface varies with H/K and n/H, so the buffer sweep differs per H even without a trace.
  std::unique_ptr<sim::MissCurves> fallback;
  if (vm.count("miss-fraction")) {
    const double f = vm["miss-fraction"].as<double>();
    if (!(f >= 0 && f <= 1)) throw_error("plan: --miss-fraction {} (expected in [0, 1])", f);
    fallback = std::make_unique<sim::MissCurves>(sim::MissCurves::constant(f, fmt::format("--miss-fraction {}", f)));
  } else {
    const sim::MissSurface surface = sim::load_miss_surface(miss_curve);
    // A trace replayed with a policy the surface lacks needs the surface only where the trace has no data.
    const std::string surface_policy = surface.has_policy(policy) || trace_path.empty() ? policy : "sglang-lru";
    fallback = std::make_unique<sim::MissCurves>(
        sim::MissCurves::from_surface(surface, surface_policy, d.hisparse.top_k));
  }
  const sim::MissCurves misses =
      trace_path.empty() ? *fallback
                         : sim::MissCurves::from_trace(trace_path, policy, hs, latent_row_bytes(s.model, d.kv_dtype),
                                                       threads, *fallback, d.hisparse.top_k,
                                                       vm.count("rescale-trace-top-k") > 0);
  const sim::CapacityPlan plan = sim::compute_capacity_plan(s, opt, misses);
  info.plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  fs::create_directories(out_dir);
  const fs::path dir(out_dir);
  write_file_atomically((dir / "plan.json").string(), sim::plan_to_json(plan, info));
  std::vector<sim::PlanPlot> plots = sim::plan_plot_list();
  // A model without a sparse indexer has no HiSparse sweeps: scripts/plot_plan.py draws its full-KV panels only.
  if (!plan.hisparse_not_applicable.empty())
    plots.erase(std::remove_if(plots.begin(), plots.end(),
                               [](const sim::PlanPlot& p) { return p.file.rfind("plan_sweep_", 0) == 0; }),
                plots.end());
  if (!vm.count("no-plots")) {
    run_plot_script("plot_plan.py", out_dir, "plan");
    for (auto& p : plots) p.png = read_file(dir / p.file);
  } else {
    // Stale plots of an earlier run must not be mistaken for this one's.
    for (const auto& p : plots) fs::remove(dir / p.file);
  }
  write_file_atomically((dir / "plan.md").string(), sim::plan_to_markdown(plan, info, plots));
  write_file_atomically((dir / "plan.html").string(), sim::plan_to_html(plan, info, plots));

  const MemoryBudget& b = plan.budget;
  if (!plan.hisparse_not_applicable.empty()) {
    fmt::print("scenario {} ({}): {} rank{} per decode instance; {} attention; HiSparse {}\n", d.name, s.source,
               plan.layout.ranks, plan.layout.ranks == 1 ? "" : "s", b.attention, plan.hisparse_not_applicable);
    if (b.sliding_layer_count > 0)
      fmt::print("SGLang SWA pools per GPU: full-attention layers {} tokens (max_total_num_tokens), sliding layers {} "
                 "tokens (swa_full_tokens_ratio {})\n",
                 sim::plan_int(static_cast<int64_t>(b.full_pool_tokens.value)),
                 sim::plan_int(static_cast<int64_t>(b.swa_pool_tokens.value)), d.swa_full_tokens_ratio);
    else
      fmt::print("SGLang pool per GPU: max_total_num_tokens {} ({} B per token)\n",
                 sim::plan_int(static_cast<int64_t>(b.full_pool_tokens.value)), b.full_cell_bytes.value);
  } else {
    fmt::print("scenario {} ({}): {} rank{} per decode instance; miss model: {}\n", d.name, s.source, plan.layout.ranks,
               plan.layout.ranks == 1 ? "" : "s", plan.miss_source);
    fmt::print("SGLang pools per GPU: full-KV max_total_num_tokens {}, HiSparse device pool {} (max_total_num_tokens), "
               "logical {}, host pool {} tokens = {:.2f} GB\n",
               sim::plan_int(static_cast<int64_t>(b.full_pool_tokens.value)),
               sim::plan_int(static_cast<int64_t>(b.device_pool_tokens.value)),
               sim::plan_int(static_cast<int64_t>(b.logical_pool_tokens.value)),
               sim::plan_int(static_cast<int64_t>(b.host_pool_tokens.value)), b.host_pool_bytes_per_gpu.value * 1e-9);
  }
  fmt::print("cost model: {}\n", info.calibration);
  fmt::print("{}", sim::plan_to_text(plan));
  if (opt.strategies.enabled) fmt::print("{}", sim::strategies_to_text(plan.strategies));
  for (const auto& w : plan.warnings) fmt::print("warning: {}\n", w);
  fmt::print("plan computed in {:.3f} s (plotting excluded); wrote {}/plan.json, plan.md, plan.html{}\n", info.plan_seconds,
             out_dir, vm.count("no-plots") ? "" : " and plan_*.png");
  return 0;
}

}  // namespace hisparse::apps
