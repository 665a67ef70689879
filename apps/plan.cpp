// @brief `hisparse plan --scenario S`: the capacity-planning report (docs/capacity.md) — full KV vs HiSparse per
// sequence length, every SGLang pool size, the binding limit, throughput against batch size, and the buffer / ratio
// sweeps — written as plan.json, plan.md, plan.html and PNG plots (scripts/plot_plan.py). The plan itself is the
// library's (sim/api/plan_request.h); this file turns flags into a PlanRequest and prints / writes the result.
#include <algorithm>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/scenario_flags.h"
#include "core/error.h"
#include "sim/api/plan_request.h"
#include "sim/plan/plan_report.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;

std::vector<int32_t> to_i32(const std::vector<int64_t>& v, const char* flag) {
  std::vector<int32_t> out;
  for (int64_t x : v) {
    if (x > (1LL << 30)) throw_error("plan: {}: {} is too large", flag, x);
    out.push_back(static_cast<int32_t>(x));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int run_plan(int argc, char** argv) {
  std::string scenario_name, seq_text, workload_name, out_dir = "plan_out", sweep_h_text, sweep_r_text;
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
      "out,o", po::value(&out_dir)->default_value(out_dir), "output directory")(
      "no-plots", "skip scripts/plot_plan.py (the reports say the plots are missing)")(
      "verbose", "print the scenario/miss-model and cost lines in full (without it: one short line each, paths as file "
                 "names)");
  add_scenario_flags(desc, kSettingFlags | kDeploymentFlags | kHostReserveFlag | kCostFlags | kMissFlags | kTraceMissFlags);
  desc.add_options()(
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
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  sim::PlanRequest req;
  req.command_line = typed_command_line("plan", argc, argv);
  req.setup = scenario_choice(vm, scenario_name, "plan");
  req.misses = miss_choice(vm, /*with_trace=*/true);
  if (vm.count("batch-cap")) req.batch_cap = vm["batch-cap"].as<int64_t>();
  const std::string limits = vm["limits"].as<std::string>();
  if (limits != "all" && limits != "memory") throw_error("plan: --limits '{}' (expected all or memory)", limits);
  req.memory_only = limits == "memory";
  sim::StrategyOptions& st = req.strategies;
  st.enabled = vm.count("strategies") > 0;
  for (const char* f : {"eviction-budget", "compression-ratio", "compression-sinks", "compression-recent",
                        "reconstruct-bytes", "recall-from", "recall-top-k"})
    if (vm.count(f) && !st.enabled) throw_error("plan: --{} needs --strategies", f);
  if (vm.count("eviction-budget")) {
    st.eviction_budget = vm["eviction-budget"].as<int64_t>();
    if (st.eviction_budget < 1) throw_error("plan: --eviction-budget {} (expected >= 1)", st.eviction_budget);
  }
  if (vm.count("compression-ratio")) st.compression_ratio = vm["compression-ratio"].as<double>();
  if (vm.count("compression-sinks")) st.compression_sinks = vm["compression-sinks"].as<int64_t>();
  if (vm.count("compression-recent")) st.compression_recent = vm["compression-recent"].as<int64_t>();
  if (vm.count("reconstruct-bytes")) {
    st.reconstruct_bytes = vm["reconstruct-bytes"].as<double>();
    if (!(st.reconstruct_bytes >= 0)) throw_error("plan: --reconstruct-bytes {} (expected >= 0)", st.reconstruct_bytes);
  }
  if (vm.count("recall-top-k")) {
    st.recall_top_k = vm["recall-top-k"].as<int64_t>();
    if (st.recall_top_k < 1) throw_error("plan: --recall-top-k {} (expected >= 1)", st.recall_top_k);
  }
  if (vm.count("recall-from")) st.recall_file = vm["recall-from"].as<std::string>();
  if (!sweep_h_text.empty())
    req.sweep_buffer_sizes = to_i32(parse_count_list(sweep_h_text, "plan", "--sweep-buffer-sizes", 1, int64_t{1} << 30,
                                                     "2048,4096,8K"), "--sweep-buffer-sizes");
  if (!sweep_r_text.empty())
    req.sweep_ratios = to_i32(parse_count_list(sweep_r_text, "plan", "--sweep-ratios", 1, 1 << 20, "2,5,10"), "--sweep-ratios");
  if (!seq_text.empty())
    req.seq_lens = parse_count_list(seq_text, "plan", "--seq-lens", 1, int64_t{1} << 30, "16K,32K,131072");
  req.workload = workload_name;

  const sim::PlanOutcome outcome = sim::run_plan(req);
  const sim::PlanRunInfo& info = outcome.info;

  sim::write_plan_files(outcome, out_dir, !vm.count("no-plots"));
  fmt::print("{}", sim::plan_console_text(outcome, vm.count("verbose") > 0));
  fmt::print("plan computed in {:.3f} s (plotting excluded); wrote {}/plan.json, plan.md, plan.html{}\n", info.plan_seconds,
             out_dir, vm.count("no-plots") ? "" : " and plan_*.png");
  return 0;
}

}  // namespace hisparse::apps
