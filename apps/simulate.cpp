// @brief `hisparse simulate --scenario S --workload W [--mode full|hisparse|both] [--duration SECONDS] [--out DIR]
// [--concurrency N[,N2,...]] [HiSparse, pool and SLO overrides]`: discrete-event serving simulation; writes
// summary/requests/steps/timeline files per run and report.json; with several concurrency levels, a sweep
// (sweep.json, sweep.csv, sweep.png) and the crossover where HiSparse starts to beat full KV.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/plot_script.h"
#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/engine/chrome_trace.h"
#include "sim/cost/cost_params.h"
#include "sim/network/link_model.h"
#include "sim/miss/miss_model.h"
#include "sim/miss/miss_surface.h"
#include "core/io/output_file.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/ranks.h"
#include "sim/serving/concurrency_sweep.h"
#include "sim/serving/serving_simulation.h"
#include "sim/workload/workload.h"
#include "traces/trace_source.h"

namespace hisparse::apps {

namespace {
namespace po = boost::program_options;
using namespace hisparse::sim;

SimTime seconds_flag(double s, const char* name) {
  if (!(s >= 0) || !std::isfinite(s)) throw_error("--{} must be a finite number of seconds >= 0, got {}", name, s);
  return static_cast<SimTime>(std::llround(s * 1e9));
}

// A positive flag value, naming the flag.
template <class T>
void positive(const po::variables_map& vm, const char* name, T v) {
  if (vm.count(name) && !(v > 0)) throw_error("--{} must be > 0, got {}", name, v);
}

// Deployment overrides from the command line, each replacing the field of the same name in the deployment YAML.
void apply_overrides(const po::variables_map& vm, Scenario& sc) {
  DeploymentSpec& d = sc.deployment;
  auto get = [&](const char* k) { return vm.count(k) > 0; };
  if (get("device-buffer-size")) d.hisparse.device_buffer_size = vm["device-buffer-size"].as<int>();
  if (get("host-to-device-ratio")) d.hisparse.host_to_device_ratio = vm["host-to-device-ratio"].as<int>();
  if (get("top-k")) d.hisparse.top_k = vm["top-k"].as<int>();
  d.hisparse.validate(fmt::format("{} with the command-line overrides", sc.source));
  if (get("kv-dtype")) {
    const std::string t = vm["kv-dtype"].as<std::string>();
    if (t != "bf16" && t != "fp8") throw_error("--kv-dtype '{}' is unknown (expected bf16 or fp8)", t);
    d.kv_dtype = t == "fp8" ? KvDtype::kFp8 : KvDtype::kBf16;
  }
  if (get("tpot-slo-ms")) {
    d.tpot_slo_ms = vm["tpot-slo-ms"].as<double>();
    positive(vm, "tpot-slo-ms", d.tpot_slo_ms);
  }
  if (get("max-running-requests")) {
    d.max_running_requests = vm["max-running-requests"].as<int>();
    if (d.max_running_requests < 0) throw_error("--max-running-requests must be >= 0 (0 = no cap), got {}", d.max_running_requests);
  }
  auto pool = [&](const char* flag, int64_t* field) {
    if (!get(flag)) return;
    *field = vm[flag].as<int64_t>();
    if (*field < 0) throw_error("--{} must be >= 0 (0 = derive), got {}", flag, *field);
  };
  pool("device-pool-tokens", &d.memory.device_pool_tokens);
  pool("host-pool-tokens", &d.memory.host_pool_tokens);
  pool("full-pool-tokens", &d.memory.full_pool_tokens);
}

}  // namespace

int run_simulate(int argc, char** argv) {
  std::string scenario_name, workload_name, mode = "both", overlap, link_model, out_dir = "simulate_out", cost_file, calibration_file, step_calibration_file;
  std::string miss_kind = "statistical", miss_trace, policy = "sglang-lru", miss_curve = kDefaultMissSurface;
  int prefill_instances = 0, max_retries = 8;
  double duration = 0, miss_fraction = -1, timeline_start = -1, timeline_length = 1.0, think_time = 0;
  std::string concurrency, admission = "pools";
  int64_t num_requests = 0;
  po::options_description desc("hisparse simulate options");
  desc.add_options()("help,h", "show this help")
      ("scenario", po::value(&scenario_name), "deployment name (scenarios/deployments/<name>.yaml) or YAML path")
      ("workload", po::value(&workload_name), "workload name (scenarios/workloads/<name>.yaml), workload YAML, or a .jsonl/.csv trace")
      ("mode", po::value(&mode)->default_value(mode), "full | hisparse | both")
      ("duration", po::value(&duration), "keep arrivals of the first SECONDS (default: the whole workload); runs until all finish")
      ("out", po::value(&out_dir)->default_value(out_dir), "output directory (created)")
      ("prefill-instances", po::value(&prefill_instances), "override the deployment's prefill instance count")
      ("overlap", po::value(&overlap), "none | two-batch | both (default: the cost file's, else none)")
      ("link-model", po::value(&link_model), "maxmin | constant (default: maxmin)")
      ("cost", po::value(&cost_file)->default_value("auto"), "cost-model terms YAML (efficiencies, latencies, "
       "overheads, each with its source): auto (the hardware file's cost_model) or a path")
      ("calibration", po::value(&calibration_file)->default_value("auto"), "PCIe and swap-in copy calibration: auto (the "
                                                   "hardware file's), none (roofline), or a YAML from `hisparse bench --calibrate`")
      ("step-calibration", po::value(&step_calibration_file)->default_value("auto"), "per-op decode-layer calibration: auto "
                                                   "(the hardware file's), none (roofline), or a YAML from `hisparse bench step --fit`")
      ("miss-model", po::value(&miss_kind)->default_value(miss_kind), "statistical (measured miss surface --miss-curve at the deployment's H/K: warm-up, then by n/H; or fitted to --miss-trace) | trace (replay --miss-trace with --policy) | placeholder (10 % once n > H, no data)")
      ("miss-curve", po::value(&miss_curve)->default_value(miss_curve), "statistical model: miss surface scenarios/miss_models/<name>.yaml or a .yaml path (written by `hisparse fit-miss-model`); its --policy columns are used")
      ("miss-fraction", po::value(&miss_fraction), "statistical model: constant per-layer miss fraction of K once n > H")
      ("miss-trace", po::value(&miss_trace), "top-k trace: fits the statistical model, or is replayed with --miss-model trace")
      ("policy", po::value(&policy)->default_value(policy), "swap-in policy for trace replay and fitting (cpu_ref/policies)")
      ("timeline-start", po::value(&timeline_start), "Chrome-trace window start, seconds (default: min(60, duration / 2))")
      ("timeline-length", po::value(&timeline_length)->default_value(timeline_length), "Chrome-trace window length, seconds (0 = none)")
      ("concurrency", po::value(&concurrency), "closed-loop clients instead of the workload's arrivals: N, or a sweep "
       "N1,N2,... (ascending) printing tokens/s, TPOT and TTFT per level and the crossover where HiSparse beats full KV; "
       "request lengths come from the workload, in order, cycled")
      ("think-time", po::value(&think_time), "closed loop: seconds a client waits after a reply before its next request (default 0)")
      ("num-requests", po::value(&num_requests), "closed loop: requests sent per level (default 4 per client, at least 64)")
      ("admission", po::value(&admission)->default_value(admission), "pools: admission checks every pool the request "
       "uses (logical, device, host pages); logical: only the logical and device allocators, as SGLang before its host "
       "check (host pages are taken as the KV lands and can fail: the request is aborted and retried)")
      ("max-retries", po::value(&max_retries)->default_value(max_retries), "aborted attempts (host pool exhausted) before a request is rejected")
      ("device-buffer-size", po::value<int>(), "HiSparse device_buffer_size H (replaces the deployment's)")
      ("host-to-device-ratio", po::value<int>(), "HiSparse host_to_device_ratio (replaces the deployment's)")
      ("top-k", po::value<int>(), "HiSparse top_k (replaces the deployment's)")
      ("kv-dtype", po::value<std::string>(), "bf16 | fp8 (replaces the deployment's kv_dtype)")
      ("tpot-slo-ms", po::value<double>(), "TPOT SLO in ms (replaces the deployment's tpot_slo_ms)")
      ("max-running-requests", po::value<int>(), "per dp rank (0 = no cap; replaces the deployment's)")
      ("device-pool-tokens", po::value<int64_t>(), "pin memory.device_pool_tokens per rank (0 = derive)")
      ("host-pool-tokens", po::value<int64_t>(), "pin memory.host_pool_tokens per rank (0 = derive)")
      ("full-pool-tokens", po::value<int64_t>(), "pin memory.full_pool_tokens per rank (0 = derive)")
      ("no-plots", "skip scripts/plot_sweep.py after a sweep");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (scenario_name.empty()) throw_error("--scenario is required (e.g. dsv32-8xh200-1tb)");
  if (workload_name.empty()) throw_error("--workload is required (e.g. mooncake_conversation)");
  std::vector<KvMode> modes;
  if (mode == "full" || mode == "both") modes.push_back(KvMode::kFull);
  if (mode == "hisparse" || mode == "both") modes.push_back(KvMode::kHiSparse);
  if (modes.empty()) throw_error("--mode '{}' is unknown (expected full, hisparse or both)", mode);

  Scenario sc = load_scenario(scenario_name);
  require_sparse_indexer(sc, "hisparse simulate");
  if (vm.count("prefill-instances")) {
    if (prefill_instances < 1) throw_error("--prefill-instances must be >= 1, got {}", prefill_instances);
    if (!sc.deployment.pd_disaggregation)
      throw_error("--prefill-instances: {} is colocated (pd_disaggregation false): prefill runs on its decode GPUs", sc.source);
    if (sc.deployment.prefill.count == 0) {
      // The deployment has no prefill section: the instances are the decode instance's shape, and the report says so.
      sc.deployment.prefill = sc.deployment.decode;
      fmt::print("prefill: {} instance(s) shaped like the decode instance ({} GPUs, tp {}), from --prefill-instances\n",
                 prefill_instances, sc.deployment.prefill.gpus, sc.deployment.prefill.tp);
    }
    sc.deployment.prefill.count = prefill_instances;
  }
  apply_overrides(vm, sc);
  if (sc.deployment.pd_disaggregation && sc.deployment.prefill.count == 0)
    fmt::print("prefill: {} is PD-disaggregated without a prefill section: TTFT is not modelled (the KV leaves the prefill "
               "nodes at each request's arrival; TPOT counts from there); add a prefill: section or --prefill-instances\n",
               sc.deployment.name);
  {
    const ServingRanks rk = serving_ranks(sc);
    fmt::print("ranks: {} per decode instance × {} GPU(s) each (attention {}), collectives on {}; prefill {}\n",
               rk.layout.ranks, rk.gpus_per_rank, rk.gpus_per_rank > 1 ? "TP, all-reduce per layer" : "DP",
               rk.collective_link,
               !sc.deployment.pd_disaggregation ? "colocated (chunked, on the decode GPUs, staging backup)"
               : sc.deployment.prefill.count > 0 ? fmt::format("on {} prefill instance(s), KV by RDMA", sc.deployment.prefill.count)
                                                 : std::string("outside the scenario (TTFT not modelled)"));
  }
  const AdmissionCheck admission_check = parse_admission_check(admission, "--admission");
  std::vector<int32_t> levels;
  if (!concurrency.empty()) levels = parse_concurrency_levels(concurrency, "--concurrency");
  if ((vm.count("think-time") || vm.count("num-requests")) && levels.empty())
    throw_error("--think-time and --num-requests apply to closed-loop clients: give --concurrency");
  if (vm.count("num-requests") && num_requests < 1) throw_error("--num-requests must be >= 1, got {}", num_requests);
  CostParams base;
  const std::string terms_line = load_cost_terms(cost_file, sc, &base);
  fmt::print("cost model: {}; {}\n", terms_line, apply_calibrations(calibration_file, step_calibration_file, &sc, &base));
  if (!link_model.empty()) {
    make_link_model(link_model);  // validates the name
    base.link_model = link_model;
  }
  std::vector<OverlapMode> overlaps = {base.overlap};
  if (overlap == "both") overlaps = {OverlapMode::kNone, OverlapMode::kTwoBatch};
  else if (!overlap.empty()) overlaps = {parse_overlap_mode(overlap, "--overlap")};

  Workload w = load_workload(workload_name);
  if (vm.count("duration")) truncate_workload(w, seconds_flag(duration, "duration"));
  if (w.requests.empty()) throw_error("workload {}: no request arrives within --duration {} s", w.name, duration);
  const double span_s = ns_to_seconds(w.requests.back().arrival);
  if (timeline_start < 0) timeline_start = std::min(60.0, span_s / 2);
  const SimTime tl_begin = seconds_flag(timeline_start, "timeline-start");
  const SimTime tl_end = tl_begin + seconds_flag(timeline_length, "timeline-length");

  std::unique_ptr<MissModel> miss;
  if (!miss_trace.empty()) {
    // A trace of another top_k would describe another selection width: its misses are not this deployment's.
    const int32_t trace_k = traces::open_trace(miss_trace)->meta().top_k;
    if (trace_k != sc.deployment.hisparse.top_k)
      throw_error("--miss-trace {} has top_k {} but scenario {} runs top_k {}; record a trace at top_k {} (or plan with "
                  "`hisparse plan --trace T --rescale-trace-top-k`, which applies it at the same H/K)",
                  miss_trace, trace_k, sc.deployment.name, sc.deployment.hisparse.top_k, sc.deployment.hisparse.top_k);
  }
  if (miss_kind == "trace") {
    if (miss_trace.empty()) throw_error("--miss-model trace needs --miss-trace PATH");
    miss = make_trace_miss_model(miss_trace, policy, sc.deployment.hisparse.device_buffer_size, sc.model.layers,
                                 sc.model.latent_row_bytes);
  } else if (miss_kind == "statistical") {
    StatisticalMissParams p;
    if (!miss_trace.empty())
      p = fit_statistical_miss_model(miss_trace, policy, sc.deployment.hisparse.device_buffer_size, sc.model.layers,
                                     sc.model.latent_row_bytes);
    else if (miss_fraction >= 0) p = placeholder_miss_params(sc);  // only layers, K, H matter: the fraction is given
    else p = miss_params_from_surface(sc, load_miss_surface(miss_curve), policy);
    if (miss_fraction >= 0) {
      p.by_ratio = {{1.0, miss_fraction}};
      p.warmup_steps = 0;  // the given fraction holds from the first step on
      p.fitted_from = fmt::format("--miss-fraction {}", miss_fraction);
    }
    miss = make_statistical_miss_model(p);
  } else if (miss_kind == "placeholder") {
    StatisticalMissParams p = placeholder_miss_params(sc);
    if (miss_fraction >= 0) p.by_ratio = {{1.0, miss_fraction}};
    miss = make_statistical_miss_model(p);
  } else {
    throw_error("--miss-model '{}' is unknown (expected statistical, trace or placeholder)", miss_kind);
  }

  std::filesystem::create_directories(out_dir);
  const SimTime think = seconds_flag(think_time, "think-time");
  auto clients_for = [&](int32_t level) {
    ClientSpec c;
    c.concurrency = level;
    c.think_time = think;
    c.requests = num_requests > 0 ? num_requests : std::max<int64_t>(64, 4 * static_cast<int64_t>(level));
    return c;
  };
  if (levels.size() > 1) {
    SweepTable table;
    table.scenario = sc.deployment.name;
    table.workload = w.name;
    table.overlap = to_string(overlaps.front());
    table.think_time = think;
    for (int32_t level : levels)
      for (KvMode m : modes) {
        ServingOptions opt;
        opt.mode = m;
        opt.cost = base;
        opt.cost.overlap = overlaps.front();
        opt.miss_model = miss.get();
        opt.admission = admission_check;
        opt.max_retries = max_retries;
        opt.clients = clients_for(level);
        opt.record_steps = true;
        const ServingResult r = run_serving(sc, w, opt);
        const ServingSummary s = summarize(r, sc);
        SweepPoint p;
        p.concurrency = level;
        p.mode = m;
        p.tokens_per_s = s.tokens_per_s;
        p.tpot_p50_ms = s.tpot_ms.p50;
        p.tpot_p99_ms = s.tpot_ms.p99;
        if (ttft_modelled(r)) { p.ttft_p50_ms = s.ttft_ms.p50; p.ttft_p99_ms = s.ttft_ms.p99; }
        p.batch_per_rank = s.batch_per_gpu.mean;
        p.finished = r.finished;
        p.rejected = r.rejected;
        p.host_alloc_failures = r.aborts;
        table.points.push_back(p);
        fmt::print("  level {:>5} {:<8} {} requests, {:.0f} tok/s, TPOT p50 {:.2f} ms\n", level, to_string(m), r.finished,
                   p.tokens_per_s, p.tpot_p50_ms);
      }
    table.crossover = find_crossover(table.points);
    fmt::print("{}", sweep_text(table));
    write_file_atomically(out_dir + "/sweep.json", sweep_json(table));
    write_file_atomically(out_dir + "/sweep.csv", sweep_csv(table));
    if (!vm.count("no-plots")) run_plot_script("plot_sweep.py", out_dir, "simulate");
    fmt::print("wrote {}/sweep.json, sweep.csv{}\n", out_dir, vm.count("no-plots") ? "" : ", sweep.png");
    return 0;
  }
  std::string report = fmt::format("{{\n\"scenario\": {},\n\"workload\": {},\n\"workload_source\": {},\n\"requests\": {},\n\"runs\": [\n",
                                   json_quote(sc.deployment.name), json_quote(w.name), json_quote(w.source), w.requests.size());
  bool first = true;
  for (KvMode m : modes) {
    for (OverlapMode ov : overlaps) {
      ServingOptions opt;
      opt.mode = m;
      opt.cost = base;
      opt.cost.overlap = ov;
      opt.miss_model = miss.get();
      opt.admission = admission_check;
      opt.max_retries = max_retries;
      if (!levels.empty()) opt.clients = clients_for(levels.front());
      ChromeTrace timeline(tl_begin, tl_end);
      const auto t0 = std::chrono::steady_clock::now();
      const ServingResult r = run_serving(sc, w, opt, &timeline);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::string tag = fmt::format("{}_{}", to_string(m), to_string(ov));
      const std::string summary = summary_json(r, sc);
      write_file_atomically(out_dir + "/summary_" + tag + ".json", summary + "\n");
      write_file_atomically(out_dir + "/requests_" + tag + ".csv", requests_csv(r));
      write_file_atomically(out_dir + "/steps_" + tag + ".csv", steps_csv(r));
      if (timeline.enabled()) timeline.write(out_dir + "/timeline_" + tag + ".json");
      report += (first ? "" : ",\n") + summary;
      first = false;
      const ServingSummary s = summarize(r, sc);
      const std::string ttft = ttft_modelled(r) ? fmt::format("TTFT p50 {:.1f} ms p99 {:.1f} ms", s.ttft_ms.p50, s.ttft_ms.p99)
                                                : std::string("TTFT not modelled");
      fmt::print("{:<20} requests {}/{} (rejected {}, host-pool aborts {})  {}  TPOT p50 {:.2f} ms p99 {:.2f} ms  "
                 "{:.1f} tok/s/GPU  batch/rank mean {:.1f}  hit {:.4f}  PCIe h2d {:.1f}%  IO stall {:.1f}%  "
                 "({} events, {:.2f} s wall; modelled)\n",
                 tag, r.finished, r.arrivals, r.rejected, r.aborts, ttft, s.tpot_ms.p50, s.tpot_ms.p99,
                 s.tokens_per_s_per_gpu, s.batch_per_gpu.mean, s.hit_rate, 100 * s.pcie_h2d_util, 100 * s.io_stall_fraction, r.events, wall);
      if (!r.first_abort.empty()) fmt::print("  first host-pool failure: {}\n", r.first_abort);
    }
  }
  report += "\n]\n}\n";
  write_file_atomically(out_dir + "/report.json", report);
  fmt::print("wrote {}/report.json and per-run summary_*.json, requests_*.csv, steps_*.csv, timeline_*.json\n", out_dir);
  return 0;
}

}  // namespace hisparse::apps
