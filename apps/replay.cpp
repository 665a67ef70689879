// @brief `hisparse replay`: its flags into a sim::ReplayRequest (sim/api/replay_request.h, which replays) and, with
// --scenario, an AdviseRequest for the second call (sim/api/replay_advice.h: the step times and the advice on the
// outcome), the CUDA replay handed in as the request's hook, then replay.json / replay.csv / plots and the speed lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/advise_setup.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "sim/report/plot_script.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "sim/api/replay_advice.h"
#include "sim/api/replay_request.h"
#include "sim/replay/cuda/replay_cuda.h"
#include "sim/replay/replay_report.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

std::vector<int32_t> parse_sizes(const std::string& text) {
  std::vector<int32_t> out;
  for (int64_t v : parse_count_list(text, "replay", "--buffer-sizes", 1, int64_t{1} << 24, "2048,4096,8K"))
    out.push_back(static_cast<int32_t>(v));
  std::sort(out.begin(), out.end());
  return out;
}

constexpr const char* kReplayUsage =
    "hisparse replay --trace T [options]\n\n"
    "Replays a top-k trace (native file, .npy directory or JSON lines) through swap-in policies and device buffer "
    "sizes;\nprints hit rate, misses per step-layer and H2D bytes per step. A device_buffer_size recommendation "
    "needs a\ndeployment: with --scenario S the replayed misses feed `hisparse advise` over the replayed sizes, "
    "for the trace's\nown context lengths (or --seq-lens / --workload), and the advice is printed and stored in "
    "replay.json.\n\noptions";

/// The command's flags as read (before they become the library's requests).
struct ReplayFlags {
  std::string trace_path, sizes_text, policies_text, initial_text, csv_path, out_dir, backend = "cpu";
  std::string v2_coordinator = "current";
  int64_t v2_device_pool_tokens = 0, v2_host_pool_tokens = 0, v2_indexer_pages = -1;
  int32_t v2_node_tokens = 0;
  int32_t top_k = 0;
  int64_t row_bytes = 1152;
  int threads = 0;
  int64_t lookahead_mb = 1024;
  int32_t page_size = 0;
  int32_t shared_topk_group = 1, shared_topk_offset = 1;
  AdviseArgs advise_args;
};

/// replay's own options (`desc`) and the advice's (`advice`, read with --scenario), bound to `f`.
void add_replay_options(po::options_description& desc, po::options_description& advice, ReplayFlags& f) {
  desc.add_options()("help,h", "show this help")(
      "trace", po::value(&f.trace_path)->required(), "trace path (native file, .npy directory, .jsonl)")(
      "buffer-sizes", po::value(&f.sizes_text)->default_value("2048,3072,4096,6144,8192"),
      "device_buffer_size values H, comma-separated (K = 1024), each >= top_k")(
      "policy", po::value(&f.policies_text)->default_value("sglang-lru,belady"),
      "policies, comma-separated: sglang-lru, belady, topk-only, fifo, lfu, clock, set-assoc[:SxW] (LRU shards, "
      "SGLang #31341; default H/32 shards x 32 ways), hisparse-v2[:P] (SGLang HiSparse V2, PR #32314: its newest "
      "column counts every resident device page; page P, default 64; H a power of two; top_k a power of two and a "
      "multiple of P); docs/swap_in.md")(
      "v2-coordinator", po::value(&f.v2_coordinator)->default_value("current"),
      "hisparse-v2's admission rules: current (SGLang hisparse_v2_coordinator.py at 09f8170: a prefix shorter than "
      "the buffer runs as standard) | older (at ca0edd9: every whole prompt page evicted); hisparse-v2:P:RULES "
      "overrides it per policy")(
      "v2-device-pool-tokens", po::value(&f.v2_device_pool_tokens),
      "hisparse-v2 over the whole trace as one batch (admitted in trace order): the device KV pool the requests "
      "share, tokens; admission falls back to standard, prefixes are evicted leaf first (current) or whole (older) "
      "and requests are retracted as the pool runs out (docs/swap_in.md); 0 (default): each request alone")(
      "v2-host-pool-tokens", po::value(&f.v2_host_pool_tokens),
      "with --v2-device-pool-tokens: host capacity for admitted prefixes, tokens (0: unbounded)")(
      "v2-indexer-pages", po::value(&f.v2_indexer_pages),
      "with --v2-device-pool-tokens: expanded indexer pages (-1: unbounded)")(
      "v2-node-tokens", po::value(&f.v2_node_tokens),
      "with --v2-device-pool-tokens: radix node length of a prefix, tokens (a node per prefill chunk; 0: one node)")(
      "initial-state", po::value(&f.initial_text), "identity | empty (overrides the trace's)")(
      "top-k", po::value(&f.top_k), "top_k (overrides the trace's)")(
      "row-bytes", po::value(&f.row_bytes)->default_value(1152),
      "bytes of one KV row of one layer (with --scenario: the model's in its kv_dtype unless given)")(
      "per-step-csv", po::value(&f.csv_path), "write one row per (policy, buffer, request, layer, step) to this file")(
      "out", po::value(&f.out_dir), "write replay.json, replay.csv and PNG plots into this directory")(
      "no-plots", "with --out: skip the PNG plots (stale ones are removed)")(
      "threads", po::value(&f.threads), "worker threads (default: hardware threads); output is identical for any")(
      "lookahead-mb", po::value(&f.lookahead_mb)->default_value(1024),
      "offline policies (belady): MiB of step records and next-use indexes held per look-ahead window; a request "
      "longer than the window is replayed with a sliding look-ahead of at least half of it (said in the output)")(
      "backend", po::value(&f.backend)->default_value("cpu"),
      "cpu | cuda: cuda runs sglang-lru through the swap-in kernels (plan only, every request x layer a batch row), "
      "same results")(
      "page-size", po::value(&f.page_size)->default_value(0),
      "replay in pages of P tokens (docs/selection.md, page traces): each layer list becomes its distinct pages, "
      "--buffer-sizes stay in tokens (multiples of P; the table shows pages), a miss moves P * --row-bytes; 0: tokens")(
      "shared-topk-group", po::value(&f.shared_topk_group)->default_value(1),
      "IndexShare: the trace's layers share top-k lists in groups (index_topk_freq; GLM-5.2: 4): each shared layer "
      "replays its anchor's list, whatever the trace recorded for it; 1: every layer its own")(
      "shared-topk-offset", po::value(&f.shared_topk_offset)->default_value(1),
      "IndexShare: index_skip_topk_offset (GLM-5.2: 3): layer l is an anchor iff max(l - offset + 1, 0) mod group = 0")(
      "quiet", "no progress on stderr");
  po::options_description advice_desc("advice (with --scenario)");
  add_advise_options(advice_desc, f.advise_args, /*with_trace=*/false);
  // --scenario is what asks for advice here, so it is optional. The advice flags are their own captioned group, after
  // replay's (a group's own options print before its subgroups: added to `all` directly they opened --help uncaptioned).
  for (const auto& opt : advice_desc.options())
    if (opt->long_name() == "buffer-sizes") continue;  // replay's own sizes are the advice's sweep
    else if (opt->long_name() == "scenario")
      advice.add_options()("scenario", po::value(&f.advise_args.scenario), "deployment to advise for (scenarios/deployments)");
    else
      advice.add(opt);
}

/// The replay request of the flags (the advice is the second call's, advise_request).
sim::ReplayRequest replay_request(const ReplayFlags& f, const po::variables_map& vm) {
  sim::ReplayRequest request;
  request.trace = f.trace_path;
  request.buffer_sizes = parse_sizes(f.sizes_text);
  request.policies = split_list(f.policies_text);
  request.v2_coordinator = f.v2_coordinator;
  request.v2_device_pool_tokens = f.v2_device_pool_tokens;
  request.v2_host_pool_tokens = f.v2_host_pool_tokens;
  request.v2_indexer_pages = f.v2_indexer_pages;
  request.v2_node_tokens = f.v2_node_tokens;
  if (vm.count("initial-state")) request.initial_state = f.initial_text;
  if (vm.count("top-k")) request.top_k = f.top_k;
  request.row_bytes = f.row_bytes;
  request.row_bytes_given = !vm["row-bytes"].defaulted();
  if (vm.count("threads")) request.threads = f.threads;
  request.lookahead_mb = f.lookahead_mb;
  request.backend = f.backend;
  request.page_size = f.page_size;
  request.shared_topk_group = f.shared_topk_group;
  request.shared_topk_offset = f.shared_topk_offset;
  request.per_step_csv = f.csv_path;
  return request;
}

/// The replay's progress line (core/progress.h): rewritten on a terminal, every 10 s in a log; its last line once
/// every request is done, if any came before it.
std::function<void(const sim::ReplayProgress&)> progress_line(ProgressPrinter& printer) {
  return [&printer](const sim::ReplayProgress& p) {
    const std::string line = fmt::format(
        "replay: {}/{} requests, {} steps, {:.1f} M entries/s", p.requests_done, p.requests_total, p.steps_done,
        p.seconds > 0 ? static_cast<double>(p.entries_done) / p.seconds / 1e6 : 0.0);
    if (p.requests_done >= p.requests_total)
      printer.finish(line);
    else
      printer.show(line);
  };
}

/// --out: replay.json, replay.csv and (unless --no-plots) the plots, each a stage of the command's tail.
void write_replay_files(const ReplayFlags& f, const po::variables_map& vm, const sim::ReplayOutcome& outcome,
                        int64_t advice_stages, ProgressReporter& tail) {
  if (f.out_dir.empty()) return;
  write_file_atomically((fs::path(f.out_dir) / "replay.json").string(), outcome.json);
  write_file_atomically((fs::path(f.out_dir) / "replay.csv").string(), outcome.csv);
  tail.update(static_cast<double>(advice_stages + 1));
  for (const char* png : {"replay_hit_rate.png", "replay_misses.png"}) fs::remove(fs::path(f.out_dir) / png);
  if (!vm.count("no-plots")) {
    sim::run_plot_script("plot_replay.py", f.out_dir, "replay");
    tail.update(static_cast<double>(advice_stages + 2));
  }
  fmt::print("wrote {}/replay.json, replay.csv{}\n", f.out_dir,
             vm.count("no-plots") ? "" : ", replay_hit_rate.png, replay_misses.png");
}

/// --backend cuda: the CUDA replay's own line (measured).
void print_cuda_timing(const sim::ReplayResult& result) {
  const sim::ReplayCudaTiming t = sim::last_replay_cuda_timing();
  fmt::print("cuda (measured): swap-in kernels ran {:.4f} s: {:.1f} M entries/s on the GPU; {} requests side by side, "
             "{} steps in flight; device start {:.3f} s (overlapping the first reads), host waited for the GPU "
             "{:.3f} s\n",
             t.kernel_seconds, static_cast<double>(result.entries) / std::max(t.kernel_seconds, 1e-9) / 1e6, t.lanes,
             t.slots, t.device_start_seconds, t.host_wait_seconds);
}

}  // namespace

int run_replay(int argc, char** argv) {
  const auto t_command = std::chrono::steady_clock::now();
  ReplayFlags f;
  po::options_description desc(kReplayUsage);
  po::options_description advice("advice: with --scenario, `hisparse advise` over the replayed buffer sizes");
  add_replay_options(desc, advice, f);
  po::options_description all;
  all.add(desc).add(advice);
  po::variables_map vm;
  store_flags(parse_args(argc, argv, all), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n" << advice << "\n";
    return 0;
  }
  po::notify(vm);

  sim::ReplayRequest request = replay_request(f, vm);
  // With a deployment, the advice is a second call after the replay; its checks come first (a refused deployment
  // replays nothing), and the replay takes the model's row bytes from it.
  const bool advise = !f.advise_args.scenario.empty();
  sim::AdviseRequest advice_request;
  if (advise) {
    advice_request = advise_request(f.advise_args, vm, "replay");
    const sim::ReplayAdvicePlan plan = sim::plan_replay_advice(request, advice_request);
    request.row_bytes = plan.row_bytes;
    fmt::print("{}", plan.warning);
  }
  sim::ReplayHooks hooks;
  hooks.print = [](const std::string& text) { fmt::print("{}", text); };
  hooks.cuda = [](traces::TraceSource& source, const sim::ReplayOptions& opt, const sim::ReplayRowSink& sink,
                  const sim::TraceOpener& open_trace) {
    sim::ReplayCudaOptions cuda_opt;
    cuda_opt.open_trace = open_trace;
    return sim::run_replay_cuda(source, opt, sink, cuda_opt);
  };
  const bool quiet = vm.count("quiet") > 0;
  ProgressPrinter replay_progress(quiet ? ProgressStyle::kOff : progress_style_by_default());
  hooks.progress = progress_line(replay_progress);
  // The tail after the replay (advice, files, plots) has no requests to count: its stages are counted instead.
  const int64_t file_stages = f.out_dir.empty() ? 0 : vm.count("no-plots") ? 1 : 2;
  const int64_t advice_stages = advise ? sim::kReplayAdviceStages : 0;
  std::optional<ProgressReporter> tail;
  const auto start_tail = [&] {
    if (!tail)
      tail.emplace("replay: advice, files and plots", static_cast<double>(advice_stages + file_stages),
                   !quiet && progress_wanted_by_default(), "stages");
  };
  hooks.checked = [&] {
    if (!f.out_dir.empty()) create_output_directory(f.out_dir);
  };
  sim::ReplayOutcome outcome = sim::run_replay_request(request, hooks);
  if (advise) {
    sim::ReplayAdviceHooks advice_hooks;
    advice_hooks.print = hooks.print;
    advice_hooks.stage_done = [&](int64_t done, int64_t) {
      start_tail();
      tail->update(static_cast<double>(done));
    };
    sim::advise_replay(request, outcome, advice_request, advice_hooks);
  } else {
    fmt::print("{}", sim::no_recommendation_text(request.trace));
  }
  start_tail();
  write_replay_files(f, vm, outcome, advice_stages, *tail);
  if (advice_stages + file_stages > 0) tail->finish();
  if (!f.csv_path.empty()) fmt::print("wrote {}\n", f.csv_path);
  // The whole command, as a user times it (from here: options, trace opening, replay, table, files, plots).
  fmt::print("{}", sim::format_replay_speed(outcome.result, std::chrono::duration<double>(
                                                                std::chrono::steady_clock::now() - t_command)
                                                                .count()));
  if (f.backend == "cuda") print_cuda_timing(outcome.result);
  return 0;
}

}  // namespace hisparse::apps
