// @brief `hisparse simulate --scenario S --workload W [--mode full|hisparse|dynamic|both|all] [--duration SECONDS] [--out DIR]
// [--concurrency N[,N2,...]] [HiSparse, pool and SLO overrides]`: discrete-event serving simulation; writes
// summary/requests/steps/timeline files per run and report.json; with several concurrency levels, a sweep
// (sweep.json, sweep.csv, sweep.png) and the crossover where HiSparse starts to beat full KV. The set-up and each run
// are the library's (sim/api/simulate_request.h); this file reads the flags, loops and writes.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "sim/report/plot_script.h"
#include "sim/report/fold_line.h"
#include "apps/scenario_flags.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "core/work_estimate.h"
#include "sim/advise/advisor.h"
#include "sim/api/simulate_request.h"
#include "sim/cost/speculative.h"
#include "sim/engine/chrome_trace.h"
#include "sim/miss/miss_surface.h"
#include "sim/serving/concurrency_sweep.h"
#include "sim/serving/ranks.h"
#include "sim/serving/run_estimate.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/steady_window.h"

namespace hisparse::apps {

namespace {
namespace po = boost::program_options;
using namespace hisparse::sim;

SimTime seconds_flag(double s, const char* name) {
  if (!(s >= 0 && s <= kMaxFlagSeconds))
    throw_error("--{} {}: expected seconds in [0, {:g}] (simulated time counts int64 nanoseconds)", name, s,
                kMaxFlagSeconds);
  return static_cast<SimTime>(std::llround(s * 1e9));
}

/// The up-front estimate of every run together (sim/serving/run_estimate.h): printed when long, refused past an hour
/// without --force (core/work_estimate.h).
void check_simulate_work(const SimulationSetup& setup, const std::vector<std::pair<KvMode, ClientSpec>>& runs,
                         bool force) {
  double requests = 0, tokens = 0, seconds = 0;
  for (const auto& [mode, clients] : runs) {
    const ServingWork w = estimate_serving_work(setup.workload, mode, clients);
    requests += static_cast<double>(w.requests);
    tokens += w.decode_tokens;
    seconds += w.seconds;
  }
  check_work_estimate({"simulate",
                       fmt::format("{} requests decoding {} tokens over {} run(s)", format_work_count(requests),
                                   format_work_count(tokens), runs.size()),
                       seconds, serving_work_basis(), ""},
                      force);
}

}  // namespace

int run_simulate(int argc, char** argv) {
  std::string scenario_name, workload_name, mode = "both", link_model, out_dir = "simulate_out";
  std::string miss_kind = "statistical", miss_trace, policy = "sglang-lru";
  int prefill_instances = 0, max_retries = 8;
  double duration = 0, timeline_start = -1, timeline_length = 1.0, think_time = 0;
  std::string concurrency, admission = "pools";
  int64_t num_requests = 0;
  po::options_description desc(
      "hisparse simulate --scenario S --workload W [--mode full|hisparse|dynamic|both|all] [--concurrency N[,N2,...]] [--out DIR]\n\n"
      "Discrete-event serving simulation of a deployment, full KV vs HiSparse, over a workload's arrivals or closed-loop\n"
      "clients: TTFT, TPOT (per request, from when it decodes) and wait (arrival until it decodes), throughput, the\n"
      "step breakdown and a Chrome-trace timeline. Writes DIR/report.json and per run summary_*.json, requests_*.csv,\n"
      "steps_*.csv, timeline_*.json; several --concurrency levels make a sweep (sweep.json, sweep.csv, sweep.png) and\n"
      "its crossover, counted where HiSparse meets the TPOT SLO. Figures are modelled.\n\noptions");
  desc.add_options()("help,h", "show this help")
      ("scenario", po::value(&scenario_name), "deployment name (scenarios/deployments/<name>.yaml) or YAML path")
      ("workload", po::value(&workload_name), "workload name (scenarios/workloads/<name>.yaml), workload YAML, or a .jsonl/.csv trace")
      ("mode", po::value(&mode)->default_value(mode), "full | hisparse | dynamic | both (full and hisparse) | all (the "
       "three); dynamic: dynamic residency (SGLang's hisparse_dynamic.py): full KV on the GPU with a host backup each "
       "step, requests demoted to HiSparse's buffer (swap) when the device pool runs short, the swap graph for a rank's "
       "batch as soon as one of its requests is in swap mode; demotions in summary_*.json and the CSVs")
      ("duration", po::value(&duration), "keep arrivals of the first SECONDS (default: the whole workload); runs until all finish")
      ("out", po::value(&out_dir)->default_value(out_dir), "output directory (created)")
      ("prefill-instances", po::value(&prefill_instances), "override the deployment's prefill instance count")
      ("link-model", po::value(&link_model), "maxmin | constant (default: maxmin)")
      // Deprecated: simulate's old name of --cost-params, kept so existing scripts run; it says so on stderr.
      ("cost", po::value<std::string>(), "deprecated alias of --cost-params (prints a warning)")
      ("miss-model", po::value(&miss_kind)->default_value(miss_kind), "statistical (measured miss surface --miss-curve at the deployment's H/K: warm-up, then by n/H; or fitted to --miss-trace) | trace (replay --miss-trace with --policy) | placeholder (10 % once n > H, no data)")
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
       "check (host pages are taken as the KV lands and can fail: the request is aborted and retried); v2: SGLang's "
       "one-home-per-token ledger (managers/hisparse_hicache_admission.py): a prompt claims host + usable device "
       "capacity, its tokens live on the host or stay on the device, prompts shorter than the device buffer run as "
       "standard requests (docs/cost_model.md)")
      ("max-retries", po::value(&max_retries)->default_value(max_retries), "aborted attempts (host pool exhausted) before a request is rejected")
      ("no-plots", "skip scripts/plot_sweep.py after a sweep")
      ("force", "run even when the up-front estimate (printed on stderr when 10 s or more) is over an hour")
      ("verbose", "print the prefill and cost-model lines in full (without it: one short line each, paths as "
                  "file names)");
  add_scenario_flags(desc, kSettingFlags | kDeploymentFlags | kCostFlags | kOverlapBoth | kMissFlags);
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  if (scenario_name.empty()) throw_error("--scenario is required (e.g. dsv32-8xh200-1tb)");
  if (workload_name.empty()) throw_error("--workload is required (e.g. mooncake_conversation)");
  std::vector<KvMode> modes;
  if (mode == "full" || mode == "both" || mode == "all") modes.push_back(KvMode::kFull);
  if (mode == "hisparse" || mode == "both" || mode == "all") modes.push_back(KvMode::kHiSparse);
  if (mode == "dynamic" || mode == "all") modes.push_back(KvMode::kDynamic);
  if (modes.empty()) throw_error("--mode '{}' is unknown (expected full, hisparse, dynamic, both or all)", mode);

  SimulateRequest req;
  req.setup = scenario_choice(vm, scenario_name, "simulate");
  req.setup.require_sparse_indexer = true;
  if (vm.count("cost")) {
    if (!vm["cost-params"].defaulted())
      throw_error("--cost and --cost-params both given: --cost is the deprecated name of --cost-params, give only that");
    fmt::print(stderr, "simulate: --cost is deprecated, use --cost-params (the same file, the same meaning in plan, "
                       "advise and simulate)\n");
    req.setup.cost_params = vm["cost"].as<std::string>();
  }
  if (vm.count("prefill-instances")) req.prefill_instances = prefill_instances;
  req.link_model = link_model;
  req.workload = workload_name;
  if (vm.count("duration")) req.duration_s = duration;
  req.miss_model = miss_kind;
  req.misses = miss_choice(vm, /*with_trace=*/false);
  req.misses.trace = miss_trace;
  req.misses.policy = policy;
  req.admission = admission;
  req.max_retries = max_retries;
  std::vector<int32_t> levels;
  if (!concurrency.empty()) levels = parse_concurrency_levels(concurrency, "--concurrency");
  if ((vm.count("think-time") || vm.count("num-requests")) && levels.empty())
    throw_error("--think-time and --num-requests apply to closed-loop clients: give --concurrency");
  // Each request sent keeps its outcome record (requests_*.csv) in memory: 10^8 of them are already gigabytes.
  constexpr int64_t kMaxRequests = 100'000'000;
  if (vm.count("num-requests") && (num_requests < 1 || num_requests > kMaxRequests))
    throw_error("--num-requests {}: expected an integer in [1, {}] (each request keeps a {}-byte outcome record in "
                "memory until the run's CSV is written)",
                num_requests, kMaxRequests, sizeof(RequestOutcome));
  const SimTime think = seconds_flag(think_time, "think-time");

  const SimulationSetup setup = load_simulation(req);
  const Scenario& sc = setup.scenario;
  const bool verbose = vm.count("verbose") > 0;
  {
    // The flag line first: the simulated settings as SGLang launch flags (full-KV runs drop HiSparse's).
    const std::string flags = deployment_sglang_flags(sc);
    const bool both = flags.rfind("--enable-hisparse", 0) == 0 && modes.front() == KvMode::kFull && modes.size() > 1;
    fmt::print("launch SGLang, as simulated: {}{}\n", flags,
               both ? " (the full-KV runs without --enable-hisparse and --hisparse-config)" : "");
  }
  for (const auto& note : setup.notes) fmt::print("{}\n", fold_line(note, verbose));
  {
    const ServingRanks rk = serving_ranks(sc);
    fmt::print("ranks: {} per decode instance × {} GPU(s) each (attention {}), collectives on {}; prefill {}\n",
               rk.layout.ranks, rk.gpus_per_rank, rk.gpus_per_rank > 1 ? "TP, all-reduce per layer" : "DP",
               rk.collective_link,
               !sc.deployment.pd_disaggregation ? "colocated (chunked, on the decode GPUs, staging backup)"
               : sc.deployment.prefill.count > 0 ? fmt::format("on {} prefill instance(s), KV by RDMA", sc.deployment.prefill.count)
                                                 : std::string("outside the scenario (TTFT not modelled)"));
  }
  fmt::print("{}\n", fold_line("cost model: " + setup.cost_line, verbose));
  std::vector<OverlapMode> overlaps = {setup.cost.overlap};
  if (vm.count("overlap") && vm["overlap"].as<std::string>() == "both") overlaps = {OverlapMode::kNone, OverlapMode::kTwoBatch};

  const Workload& w = setup.workload;
  const double span_s = ns_to_seconds(w.requests.back().arrival);
  if (timeline_start < 0) timeline_start = std::min(60.0, span_s / 2);
  const SimTime tl_begin = seconds_flag(timeline_start, "timeline-start");
  const SimTime tl_end = tl_begin + seconds_flag(timeline_length, "timeline-length");

  auto clients_for = [&](int32_t level) {
    ClientSpec c;
    c.concurrency = level;
    c.think_time = think;
    c.requests = num_requests > 0 ? num_requests : std::max<int64_t>(64, 4 * static_cast<int64_t>(level));
    return c;
  };
  // Progress over every run's requests (finished or rejected), all runs together: one ETA for the whole command.
  std::vector<std::pair<KvMode, ClientSpec>> runs;
  if (levels.size() > 1) {
    for (int32_t level : levels)
      for (KvMode m : modes) runs.emplace_back(m, clients_for(level));
  } else {
    for (KvMode m : modes)
      for (size_t i = 0; i < overlaps.size(); ++i)
        runs.emplace_back(m, levels.empty() ? ClientSpec{} : clients_for(levels.front()));
  }
  check_simulate_work(setup, runs, vm.count("force") > 0);
  create_output_directory(out_dir);
  int64_t all_requests = 0;
  for (const auto& mc : runs) all_requests += requests_sent(setup, mc.second);
  ProgressReporter progress("simulate", static_cast<double>(all_requests), progress_wanted_by_default(),
                            fmt::format("requests done over {} run(s)", runs.size()));
  int64_t earlier_runs = 0;
  auto run = [&](KvMode m, OverlapMode ov, const ClientSpec& c, bool record_steps, ChromeTrace* timeline) {
    ServingResult r = simulate(setup, m, ov, c, record_steps, timeline, [&](int64_t done) {
      progress.update(static_cast<double>(earlier_runs + done));
    });
    earlier_runs += requests_sent(setup, c);
    return r;
  };
  if (levels.size() > 1) {
    SweepTable table;
    table.scenario = sc.deployment.name;
    table.workload = w.name;
    table.overlap = to_string(overlaps.front());
    table.think_time = think;
    table.tpot_slo_ms = sc.deployment.tpot_slo_ms;
    for (int32_t level : levels)
      for (KvMode m : modes) {
        const ServingResult r = run(m, overlaps.front(), clients_for(level), /*record_steps=*/true, nullptr);
        const ServingSummary s = summarize(r, sc);
        SweepPoint p;
        p.concurrency = level;
        p.mode = m;
        p.tokens_per_s = s.tokens_per_s;
        p.tpot_p50_ms = s.tpot_ms.p50;
        p.tpot_p99_ms = s.tpot_ms.p99;
        p.wait_p50_ms = s.wait_ms.p50;
        p.wait_p99_ms = s.wait_ms.p99;
        if (ttft_modelled(r)) { p.ttft_p50_ms = s.ttft_ms.p50; p.ttft_p99_ms = s.ttft_ms.p99; }
        p.batch_per_rank = s.batch_per_gpu.mean;
        p.steady_tokens_per_s = steady_window(r).tokens_per_s;
        p.finished = r.finished;
        p.rejected = r.rejected;
        p.host_alloc_failures = r.aborts;
        table.points.push_back(p);
        progress.clear();
        fmt::print("  level {:>5} {:<8} {} requests, {:.0f} tok/s, TPOT p50 {:.2f} ms\n", level, to_string(m), r.finished,
                   p.tokens_per_s, p.tpot_p50_ms);
      }
    progress.finish();
    table.crossover = find_crossover(table.points, table.tpot_slo_ms);
    fmt::print("{}", sweep_text(table));
    write_file_atomically(out_dir + "/sweep.json", sweep_json(table));
    write_file_atomically(out_dir + "/sweep.csv", sweep_csv(table));
    if (!vm.count("no-plots")) sim::run_plot_script("plot_sweep.py", out_dir, "simulate");
    fmt::print("wrote {}/sweep.json, sweep.csv{}\n", out_dir, vm.count("no-plots") ? "" : ", sweep.png");
    return 0;
  }
  std::string report = fmt::format("{{\n\"scenario\": {},\n\"workload\": {},\n\"workload_source\": {},\n\"requests\": {},\n\"runs\": [\n",
                                   json_quote(sc.deployment.name), json_quote(w.name), json_quote(w.source), w.requests.size());
  bool first = true;
  for (KvMode m : modes) {
    for (OverlapMode ov : overlaps) {
      const ClientSpec clients = levels.empty() ? ClientSpec{} : clients_for(levels.front());
      ChromeTrace timeline(tl_begin, tl_end);
      const auto t0 = std::chrono::steady_clock::now();
      const ServingResult r = run(m, ov, clients, /*record_steps=*/true, &timeline);
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
      progress.clear();
      const std::string ttft = ttft_modelled(r) ? fmt::format("TTFT p50 {:.1f} ms p99 {:.1f} ms", s.ttft_ms.p50, s.ttft_ms.p99)
                                                : std::string("TTFT not modelled");
      fmt::print("{:<20} requests {}/{} (rejected {}, host-pool aborts {})  {}  TPOT p50 {:.2f} ms p99 {:.2f} ms  "
                 "wait p50 {:.1f} ms p99 {:.1f} ms  "
                 "{:.1f} tok/s/GPU  batch/rank mean {:.1f}  hit {:.4f}  PCIe h2d {:.1f}%  IO stall {:.1f}%  "
                 "({} events, {:.2f} s wall; modelled)\n",
                 tag, r.finished, r.arrivals, r.rejected, r.aborts, ttft, s.tpot_ms.p50, s.tpot_ms.p99, s.wait_ms.p50, s.wait_ms.p99,
                 s.tokens_per_s_per_gpu, s.batch_per_gpu.mean, s.hit_rate, 100 * s.pcie_h2d_util, 100 * s.io_stall_fraction, r.events, wall);
      if (!r.first_abort.empty()) fmt::print("  first host-pool failure: {}\n", r.first_abort);
      if (r.retraction != "none")
        fmt::print("  {} (modelled, sim/serving/retraction.cpp): {} retractions, {} prompt + decoded tokens dropped, {} "
                   "recomputed in {:.3f} GPU-s of prefill\n", r.retraction, r.retractions, r.retracted_tokens,
                   r.recomputed_tokens, ns_to_seconds(r.recompute_ns));
      if (m != KvMode::kFull)
        fmt::print("  transfers (modelled, sim/cost/transfer_granularity.h): decode loads each layer's misses in its own "
                   "copy, {} per-layer loads over {} busy rank-steps (pcie.latency_ns {} each, or as a swap-in calibration "
                   "measured the call); prefill → host pool: {} batched all-layer copies ({}), host path {}\n",
                   r.miss_transfers, r.gpu_steps_busy, sc.hardware.pcie.latency_ns, r.staging_copies,
                   sc.deployment.pd_disaggregation ? "PD: the prefill instances write the host pool by RDMA instead"
                                                   : "colocated staging, one per request",
                   sc.deployment.host_pool_remote_numa ? "cross-NUMA (numa.cross_node_factor applies)" : "NUMA-local");
      const ModelSpec& model = sc.model;
      if (model.topk_anchor_layers() < model.layers || sc.deployment.mtp_draft_tokens > 0) {
        // IndexShare and MTP change the step's make-up: its terms, mean per busy GPU-step (modelled).
        const StepCost& c = s.mean_step;
        fmt::print("  step (mean per GPU-step, ms; modelled): indexer {:.3f} + topk {:.3f} ({} of {} layers select) + "
                   "swap_in {:.3f} + h2d {:.3f} + attention {:.3f} + moe {:.3f} + draft {:.3f} + stall {:.3f} + sync "
                   "{:.3f}; prefetch_hidden {:.3f} (the shared layers' copy under compute)\n",
                   c.indexer * 1e-6, c.topk * 1e-6, model.topk_anchor_layers(), model.layers, c.swap_in * 1e-6,
                   c.h2d * 1e-6, c.attention * 1e-6, c.moe * 1e-6, c.draft * 1e-6, c.stall * 1e-6, c.sync * 1e-6,
                   c.prefetch_hidden * 1e-6);
      }
      if (sc.deployment.mtp_draft_tokens > 0)
        fmt::print("  MTP: {} draft tokens at acceptance {:g}: {:.3f} accepted tokens per request-step in the run "
                   "(expected 1 + a + ... + a^d = {:.3f}; requests' last steps take only what they have left)\n",
                   sc.deployment.mtp_draft_tokens, sc.deployment.mtp_acceptance, tokens_per_request_step(r),
                   mtp_accepted_tokens(sc.deployment.mtp_draft_tokens, sc.deployment.mtp_acceptance));
    }
  }
  progress.finish();
  report += "\n]\n}\n";
  write_file_atomically(out_dir + "/report.json", report);
  fmt::print("wrote {}/report.json and per-run summary_*.json, requests_*.csv, steps_*.csv, timeline_*.json\n", out_dir);
  return 0;
}

}  // namespace hisparse::apps
