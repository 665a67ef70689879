// @brief `hisparse simulate --scenario S --workload W [--mode full|hisparse|dynamic|both|all] [--duration SECONDS] [--out DIR]
// [--concurrency N[,N2,...]] [HiSparse, pool and SLO overrides]`: discrete-event serving simulation; writes
// summary/requests/steps/timeline files per run and report.json; with several concurrency levels, a sweep
// (sweep.json, sweep.csv, sweep.png) and the crossover where HiSparse starts to beat full KV. The set-up and each run
// are the library's (sim/api/simulate_outcome.h); this file fills the request from the flags, then prints and writes
// the outcome run by run.
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/scenario_flags.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "sim/api/simulate_outcome.h"

namespace hisparse::apps {

namespace {
namespace po = boost::program_options;
using namespace hisparse::sim;

/// The flags' values that are not the request's own fields until they are checked.
struct SimulateFlags {
  std::string scenario, workload, concurrency, miss_trace;
  int prefill_instances = 0;
  double duration = 0, timeline_start = -1;
  bool verbose = false, force = false, plots = true;
  std::string out_dir = "simulate_out";
};

po::options_description simulate_options(SimulateRequest& req, SimulateFlags& f) {
  po::options_description desc(
      "hisparse simulate --scenario S --workload W [--mode full|hisparse|dynamic|both|all] [--concurrency N[,N2,...]] [--out DIR]\n\n"
      "Discrete-event serving simulation of a deployment, full KV vs HiSparse, over a workload's arrivals or closed-loop\n"
      "clients: TTFT, TPOT (per request, from when it decodes) and wait (arrival until it decodes), throughput, the\n"
      "step breakdown and a Chrome-trace timeline. Writes DIR/report.json and per run summary_*.json, requests_*.csv,\n"
      "steps_*.csv, timeline_*.json; several --concurrency levels make a sweep (sweep.json, sweep.csv, sweep.png) and\n"
      "its crossover, counted where HiSparse meets the TPOT SLO. Figures are modelled.\n\noptions");
  desc.add_options()("help,h", "show this help")
      ("scenario", po::value(&f.scenario), "deployment name (scenarios/deployments/<name>.yaml) or YAML path")
      ("workload", po::value(&f.workload), "workload name (scenarios/workloads/<name>.yaml), workload YAML, or a .jsonl/.csv trace")
      ("mode", po::value(&req.mode)->default_value(req.mode), "full | hisparse | dynamic | both (full and hisparse) | all (the "
       "three); dynamic: dynamic residency (SGLang's hisparse_dynamic.py): full KV on the GPU with a host backup each "
       "step, requests demoted to HiSparse's buffer (swap) when the device pool runs short, the swap graph for a rank's "
       "batch as soon as one of its requests is in swap mode; demotions in summary_*.json and the CSVs")
      ("duration", po::value(&f.duration), "keep arrivals of the first SECONDS (default: the whole workload); runs until all finish")
      ("out", po::value(&f.out_dir)->default_value(f.out_dir), "output directory (created)")
      ("prefill-instances", po::value(&f.prefill_instances), "override the deployment's prefill instance count")
      ("link-model", po::value(&req.link_model), "maxmin | constant (default: maxmin)")
      // Deprecated: simulate's old name of --cost-params, kept so existing scripts run; it says so on stderr.
      ("cost", po::value<std::string>(), "deprecated alias of --cost-params (prints a warning)")
      ("miss-model", po::value(&req.miss_model)->default_value(req.miss_model), "statistical (measured miss surface --miss-curve at the deployment's H/K: warm-up, then by n/H; or fitted to --miss-trace) | trace (replay --miss-trace with --policy) | placeholder (10 % once n > H, no data)")
      ("miss-trace", po::value(&f.miss_trace), "top-k trace: fits the statistical model, or is replayed with --miss-model trace")
      ("policy", po::value(&req.misses.policy)->default_value(req.misses.policy), "swap-in policy for trace replay and fitting (cpu_ref/policies)")
      ("timeline-start", po::value(&f.timeline_start), "Chrome-trace window start, seconds (default: min(60, duration / 2))")
      ("timeline-length", po::value(&req.timeline_length_s)->default_value(req.timeline_length_s), "Chrome-trace window length, seconds (0 = none)")
      ("concurrency", po::value(&f.concurrency), "closed-loop clients instead of the workload's arrivals: N, or a sweep "
       "N1,N2,... (ascending) printing tokens/s, TPOT and TTFT per level and the crossover where HiSparse beats full KV; "
       "request lengths come from the workload, in order, cycled")
      ("think-time", po::value(&req.think_time_s), "closed loop: seconds a client waits after a reply before its next request (default 0)")
      ("num-requests", po::value(&req.num_requests), "closed loop: requests sent per level (default 4 per client, at least 64)")
      ("admission", po::value(&req.admission)->default_value(req.admission), "pools: admission checks every pool the request "
       "uses (logical, device, host pages); logical: only the logical and device allocators, as SGLang before its host "
       "check (host pages are taken as the KV lands and can fail: the request is aborted and retried); v2: SGLang's "
       "one-home-per-token ledger (managers/hisparse_hicache_admission.py): a prompt claims host + usable device "
       "capacity, its tokens live on the host or stay on the device, prompts shorter than the device buffer run as "
       "standard requests (docs/cost_model.md)")
      ("v2-coordinator", po::value(&req.v2_coordinator)->default_value(req.v2_coordinator), "--admission v2's rules: "
       "current (SGLang's V2 coordinator, hisparse_v2_coordinator.py admit_request at 09f8170: a prefix shorter than "
       "the buffer H runs as standard, so do requests that find host capacity, indexer pages or the temp buffer run "
       "out; HiSparse retracts under decode_reserve_ratio < 1) | older (the HiCache-backing one-home-per-token ledger "
       "of PR #35488, as before)")
      ("prefix-cache", po::value(&req.prefix_cache)->default_value(req.prefix_cache), "auto | on | off: the radix "
       "prefix cache of each rank (SGLang's RadixCache: page-granular match of the prompt's prefix blocks, locked while "
       "the request runs, LRU eviction of unlocked leaves; full KV: in the KV pool, HiSparse: in the host pool); auto: "
       "SGLang's default, on for a colocated server, off on a PD decode server (a chunk cache); acts on workloads naming "
       "prefix blocks (Mooncake hash_ids); hit rate, prefill tokens saved and the pool bytes it held in summary_*.json")
      ("max-retries", po::value(&req.max_retries)->default_value(req.max_retries), "aborted attempts (host pool exhausted) before a request is rejected")
      ("no-plots", "skip scripts/plot_sweep.py after a sweep")
      ("force", "run even when the up-front estimate (printed on stderr when 10 s or more) is over an hour")
      ("verbose", "print the prefill and cost-model lines in full (without it: one short line each, paths as "
                  "file names)");
  add_scenario_flags(desc, kSettingFlags | kDeploymentFlags | kCostFlags | kOverlapBoth | kMissFlags);
  return desc;
}

/// The request's remaining fields from the parsed flags (the flags read into it directly are already there).
void fill_request(const po::variables_map& vm, const SimulateFlags& f, SimulateRequest& req) {
  if (f.scenario.empty()) throw_error("--scenario is required (e.g. dsv32-8xh200-1tb)");
  if (f.workload.empty()) throw_error("--workload is required (e.g. mooncake_conversation)");
  const std::string policy = req.misses.policy;  // miss_choice below replaces the whole MissChoice
  req.setup = scenario_choice(vm, f.scenario, "simulate");
  req.setup.require_sparse_indexer = true;
  if (vm.count("cost")) {
    if (!vm["cost-params"].defaulted())
      throw_error("--cost and --cost-params both given: --cost is the deprecated name of --cost-params, give only that");
    fmt::print(stderr, "simulate: --cost is deprecated, use --cost-params (the same file, the same meaning in plan, "
                       "advise and simulate)\n");
    req.setup.cost_params = vm["cost"].as<std::string>();
  }
  if (vm.count("prefill-instances")) req.prefill_instances = f.prefill_instances;
  req.workload = f.workload;
  if (vm.count("duration")) req.duration_s = f.duration;
  req.misses = miss_choice(vm, /*with_trace=*/false);
  req.misses.trace = f.miss_trace;
  req.misses.policy = policy;
  req.both_overlaps = vm.count("overlap") && vm["overlap"].as<std::string>() == "both";
  if (!f.concurrency.empty()) req.concurrency = parse_concurrency_levels(f.concurrency, "--concurrency");
  // A flag given is a flag checked, even at its default value.
  if ((vm.count("think-time") || vm.count("num-requests")) && req.concurrency.empty())
    throw_error("--think-time and --num-requests apply to closed-loop clients: give --concurrency");
  if (vm.count("num-requests")) check_num_requests(req.num_requests);  // 0 given is refused, not the default
  if (vm.count("timeline-start")) req.timeline_start_s = f.timeline_start;
}

}  // namespace

int run_simulate(int argc, char** argv) {
  SimulateRequest req;
  SimulateFlags f;
  const po::options_description desc = simulate_options(req, f);
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  f.verbose = vm.count("verbose") > 0;
  f.plots = vm.count("no-plots") == 0;
  fill_request(vm, f, req);

  SimulateOutcome outcome = prepare_simulate(req);
  fmt::print("{}", simulate_header_text(outcome, f.verbose));
  check_simulate_work(outcome, vm.count("force") > 0);
  create_output_directory(f.out_dir);
  // Progress over every run's requests (finished or rejected), all runs together: one ETA for the whole command.
  ProgressReporter progress("simulate", static_cast<double>(outcome.requests_total()), progress_wanted_by_default(),
                            fmt::format("requests done over {} run(s)", outcome.runs.size()));
  SimulateHooks hooks;
  hooks.keep_results = false;  // each run's files are written as it finishes; one run's result in memory at a time
  hooks.on_progress = [&](int64_t done) { progress.update(static_cast<double>(done)); };
  hooks.on_run = [&](const SimulateOutcome& o, SimulateRun& run) {
    if (!o.is_sweep()) write_simulate_run_files(run, f.out_dir);
    progress.clear();
    fmt::print("{}", simulate_run_text(o, run));
  };
  run_simulate_runs(outcome, hooks);
  progress.finish();
  fmt::print("{}", simulate_footer_text(outcome));
  write_simulate_files(outcome, f.out_dir, f.plots, /*runs_written=*/true);
  fmt::print("{}", simulate_wrote_text(outcome, f.out_dir, f.plots));
  return 0;
}

}  // namespace hisparse::apps
