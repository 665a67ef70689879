// @brief `hisparse replay`: replay a top-k trace through swap-in policies and buffer sizes, print the table (and, with
// a deployment, the advice), and write replay.json / replay.csv / plots / the per-step CSV.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/advise_setup.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/plot_script.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "core/io/output_file.h"
#include "sim/replay/cuda/replay_cuda.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "sim/replay/replay_step_time.h"
#include "traces/page_trace_source.h"
#include "traces/trace_source.h"

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

/// The replayed sizes in the scenario's units: the same H/K when the trace is applied at another top_k.
std::vector<int32_t> rescaled_sizes(const std::vector<int32_t>& sizes, int32_t trace_k, const std::string& scenario) {
  if (scenario.empty()) return sizes;
  const int32_t K = load_scenario(scenario).deployment.hisparse.top_k;
  std::vector<int32_t> out;
  for (int32_t h : sizes) {
    const auto v = static_cast<int32_t>(std::llround(static_cast<double>(h) * K / trace_k));
    if (v >= K && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

/// The replay's recommendation: the advice for the trace's own context mix (or --seq-lens) on the deployment,
/// with the replayed trace as the miss model over the replayed buffer sizes. Before it, the modelled step time of
/// every replayed decode step on the deployment (printed; its JSON in *step_time_json).
std::string advice_json(const AdviseArgs& args, const po::variables_map& vm, const sim::ReplayResult& result,
                        const std::vector<int32_t>& sizes, const std::string& trace_path, std::string* step_time_json) {
  if (args.scenario.empty()) return sim::no_deployment_recommendation_json();
  AdviseArgs a = args;
  a.trace = trace_path;
  a.policy = sim::recommended_policy(result);
  a.buffer_sizes.clear();
  for (int32_t h : sizes) a.buffer_sizes += fmt::format("{}{}", a.buffer_sizes.empty() ? "" : ",", h);
  AdviseSetup setup = make_advise_setup(a, vm, "replay");
  std::vector<sim::ContextMix> mixes;
  if (!a.seq_lens.empty() || !a.workload.empty()) {
    mixes = advise_mixes(a, setup.scenario, "replay");
  } else {
    // Every step record is one decode step of one request: the trace's own decode-time-weighted mix (the replay kept
    // each step's seq_len, so the trace is not read a second time).
    std::vector<std::pair<double, double>> samples;
    samples.reserve(result.step_seq_lens.size());
    for (int32_t n : result.step_seq_lens) samples.emplace_back(static_cast<double>(n), 1.0);
    mixes.push_back(sim::context_mix_from_samples(std::move(samples), a.mix_classes,
                                                  fmt::format("the trace's {} decode steps", result.decode_steps)));
  }
  std::vector<sim::Advice> advices;
  for (const auto& m : mixes) advices.push_back(sim::advise(setup.scenario, m, *setup.misses, setup.options));
  add_extrapolation_warnings(setup, advices);
  const sim::Candidate* rec = advices.front().recommended();
  // The step time is priced at a batch the deployment runs: its own cap when it sets one, else the concurrency the
  // advice below recommends (what a user would configure), else a request alone.
  const int mrr = setup.scenario.deployment.max_running_requests;
  const int64_t batch = mrr > 0 ? mrr : rec && rec->per_rank > 0 ? rec->per_rank : 1;
  const std::string why =
      mrr > 0 ? "the deployment's max_running_requests"
      : rec && rec->per_rank > 0
          ? fmt::format("the concurrency the advice recommends below, with {}", rec->name())
          : "one request alone: the deployment sets no max_running_requests and the advice recommends nothing";
  const sim::ReplayStepTimeReport steps =
      sim::model_replay_step_times(setup.scenario, setup.options.cost, result, batch, why);
  fmt::print("{}", sim::format_step_times(steps));
  *step_time_json = sim::step_times_json(steps);
  fmt::print("\nadvice for {} (device_buffer_size swept over the replayed sizes; misses from this replay, policy {}):\n{}",
             setup.scenario.deployment.name, a.policy, sim::advice_to_text(setup.scenario, advices, setup.info));
  if (!rec) return "{\"device_buffer_size\": null, \"reason\": \"no setting fits one request within the SLO\"}";
  return fmt::format("{{\"policy\": {}, \"context\": {}, \"setting\": {}, \"device_buffer_size\": {}, "
                     "\"host_to_device_ratio\": {}, \"max_running_requests\": {}, \"goodput_tokens_per_s\": {:.3f}, "
                     "\"sglang_flags\": {}, \"scenario\": {}}}",
                     json_quote(a.policy), json_quote(advices.front().mix.label), json_quote(rec->name()),
                     rec->buffer_size, rec->ratio, rec->per_rank * sim::rank_layout(setup.scenario).ranks, rec->goodput,
                     json_quote(sim::sglang_flags(*rec, setup.scenario)),
                     json_quote(setup.scenario.deployment.name));
}

}  // namespace

int run_replay(int argc, char** argv) {
  const auto t_command = std::chrono::steady_clock::now();
  std::string trace_path, sizes_text, policies_text, initial_text, csv_path, out_dir, backend = "cpu";
  int32_t top_k = 0;
  int64_t row_bytes = 1152;
  int threads = 0;
  int64_t lookahead_mb = 1024;
  int32_t page_size = 0;
  AdviseArgs advise_args;
  po::options_description desc(
      "hisparse replay --trace T [options]\n\n"
      "Replays a top-k trace (native file, .npy directory or JSON lines) through swap-in policies and device buffer "
      "sizes;\nprints hit rate, misses per step-layer and H2D bytes per step. A device_buffer_size recommendation "
      "needs a\ndeployment: with --scenario S the replayed misses feed `hisparse advise` over the replayed sizes, "
      "for the trace's\nown context lengths (or --seq-lens / --workload), and the advice is printed and stored in "
      "replay.json.\n\noptions");
  desc.add_options()("help,h", "show this help")(
      "trace", po::value(&trace_path)->required(), "trace path (native file, .npy directory, .jsonl)")(
      "buffer-sizes", po::value(&sizes_text)->default_value("2048,3072,4096,6144,8192"),
      "device_buffer_size values H, comma-separated (K = 1024), each >= top_k")(
      "policy", po::value(&policies_text)->default_value("sglang-lru,belady"),
      "policies, comma-separated: sglang-lru, belady, topk-only, fifo, lfu, clock")(
      "initial-state", po::value(&initial_text), "identity | empty (overrides the trace's)")(
      "top-k", po::value(&top_k), "top_k (overrides the trace's)")(
      "row-bytes", po::value(&row_bytes)->default_value(1152),
      "bytes of one KV row of one layer (with --scenario: the model's in its kv_dtype unless given)")(
      "per-step-csv", po::value(&csv_path), "write one row per (policy, buffer, request, layer, step) to this file")(
      "out", po::value(&out_dir), "write replay.json, replay.csv and PNG plots into this directory")(
      "no-plots", "with --out: skip the PNG plots (stale ones are removed)")(
      "threads", po::value(&threads), "worker threads (default: hardware threads); output is identical for any")(
      "lookahead-mb", po::value(&lookahead_mb)->default_value(1024),
      "offline policies (belady): MiB of step records and next-use indexes held per look-ahead window; a request "
      "longer than the window is replayed with a sliding look-ahead of at least half of it (said in the output)")(
      "backend", po::value(&backend)->default_value("cpu"),
      "cpu | cuda: cuda runs sglang-lru through the swap-in kernels (plan only, every request x layer a batch row), "
      "same results")(
      "page-size", po::value(&page_size)->default_value(0),
      "replay in pages of P tokens (docs/selection.md, page traces): each layer list becomes its distinct pages, "
      "--buffer-sizes stay in tokens (multiples of P; the table shows pages), a miss moves P * --row-bytes; 0: tokens")(
      "quiet", "no progress on stderr");
  po::options_description advice_desc("advice (with --scenario)");
  add_advise_options(advice_desc, advise_args, /*with_trace=*/false);
  // --scenario is what asks for advice here, so it is optional.
  po::options_description all;
  all.add(desc);
  for (const auto& opt : advice_desc.options())
    if (opt->long_name() == "buffer-sizes") continue;  // replay's own sizes are the advice's sweep
    else if (opt->long_name() == "scenario")
      all.add_options()("scenario", po::value(&advise_args.scenario), "deployment to advise for (scenarios/deployments)");
    else
      all.add(opt);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).run(), vm);
  if (vm.count("help")) {
    std::cout << all << "\n";
    return 0;
  }
  po::notify(vm);

  traces::TraceOpenOptions open_opts;
  if (vm.count("initial-state")) open_opts.initial_state = traces::parse_initial_state(initial_text, "--initial-state");
  if (vm.count("top-k")) {
    if (top_k < 1) throw_error("replay: --top-k {} must be >= 1", top_k);
    open_opts.top_k = top_k;
  }
  if (!vm.count("threads")) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  advise_args.threads = threads;
  if (!advise_args.scenario.empty()) {
    const Scenario s = load_scenario(advise_args.scenario);
    // The advice prices HiSparse's latent rows and indexer: a model without DSA's sparse indexer has neither.
    if (!s.model.has_sparse_indexer())
      throw_error("replay: --scenario {}: model {} has no sparse indexer ({} attention), so HiSparse does not apply "
                  "and there is nothing to advise; replay without --scenario (pass --row-bytes for its KV row)",
                  advise_args.scenario, s.model.name, s.model.is_gqa() ? "gqa" : "mla");
    if (vm["row-bytes"].defaulted()) row_bytes = latent_row_bytes(s.model, s.deployment.kv_dtype);
    const int32_t K = traces::open_trace(trace_path, open_opts)->meta().top_k;
    if (K != s.deployment.hisparse.top_k && !vm.count("rescale-trace-top-k"))
      throw_error("replay: trace {} has top_k {} but scenario {} runs top_k {}: its misses would not describe that "
                  "deployment; replay a trace recorded at top_k {}, or pass --rescale-trace-top-k to apply it at the "
                  "same H/K",
                  trace_path, K, s.deployment.name, s.deployment.hisparse.top_k, s.deployment.hisparse.top_k);
  }

  if (backend != "cpu" && backend != "cuda")
    throw_error("replay: --backend '{}' unknown (expected cpu or cuda)", backend);
  if (lookahead_mb < 1 || lookahead_mb > (int64_t{1} << 30))
    throw_error("replay: --lookahead-mb {} must be in 1..2^30", lookahead_mb);
  auto source = traces::open_trace(trace_path, open_opts);
  sim::ReplayOptions opt;
  opt.lookahead_bytes = static_cast<size_t>(lookahead_mb) << 20;
  opt.policies = split_list(policies_text);
  opt.buffer_sizes = parse_sizes(sizes_text);
  opt.row_bytes = row_bytes;
  opt.threads = threads;
  opt.keep_step_rows = !csv_path.empty();
  int32_t page_width = 0;
  if (page_size != 0) {
    traces::check_page_size(page_size, "replay: --page-size");
    if (!advise_args.scenario.empty())
      throw_error("replay: --page-size {} with --scenario: the advisor prices token rows; replay in pages without a "
                  "deployment, or in tokens with one", page_size);
    source = std::make_unique<traces::PageTraceSource>(std::move(source), page_size);
    page_width = source->meta().top_k;
    std::string map;
    for (int32_t& h : opt.buffer_sizes) {
      if (h % page_size != 0 || h / page_size < page_width)
        throw_error("replay: --buffer-sizes {} with --page-size {}: expected a multiple of {} tokens holding at least "
                    "the {} pages the widest layer list of {} touches (>= {} tokens)",
                    h, page_size, page_size, page_width, trace_path, int64_t{page_width} * page_size);
      map += fmt::format("{}{} tokens = {} pages", map.empty() ? "" : ", ", h, h / page_size);
      h /= page_size;
    }
    if (row_bytes > (int64_t{1} << 40) / page_size)
      throw_error("replay: --row-bytes {} x --page-size {} overflows the byte counters", row_bytes, page_size);
    row_bytes *= page_size;
    fmt::print("page replay: pages of {} tokens; the table's top_k and buffer sizes are in PAGES: top_k {} pages (the "
               "widest layer list), H {}; a miss moves one page = {} B\n",
               page_size, page_width, map, row_bytes);
  }
  const bool quiet = vm.count("quiet") > 0;
  auto last = std::chrono::steady_clock::now();
  opt.progress = [&](const sim::ReplayProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (quiet || (std::chrono::duration<double>(now - last).count() < 1.0 && p.requests_done < p.requests_total)) {
      return;
    }
    last = now;
    fmt::print(stderr, "replay: {}/{} requests, {} steps, {:.1f} M entries/s\n", p.requests_done, p.requests_total,
               p.steps_done, p.seconds > 0 ? static_cast<double>(p.entries_done) / p.seconds / 1e6 : 0.0);
  };
  if (!out_dir.empty()) fs::create_directories(out_dir);

  std::unique_ptr<sim::StepCsvWriter> csv;
  if (!csv_path.empty()) csv = std::make_unique<sim::StepCsvWriter>(csv_path);
  std::vector<sim::ReplayConfigStats> config_names;
  for (const auto& p : opt.policies) {
    for (int32_t H : opt.buffer_sizes) {
      sim::ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      config_names.push_back(s);
    }
  }
  auto sink = [&](const sim::ReplayRequestRows& rows) { csv->write(rows, config_names, row_bytes); };
  sim::ReplayCudaOptions cuda_opt;
  cuda_opt.open_trace = [&]() -> std::unique_ptr<traces::TraceSource> {
    auto s = traces::open_trace(trace_path, open_opts);
    if (page_width > 0) return std::make_unique<traces::PageTraceSource>(std::move(s), page_size, page_width);
    return s;
  };
  opt.open_trace = cuda_opt.open_trace;  // the CPU driver's lanes, when there are more threads than layers
  const sim::ReplayResult result = backend == "cuda" ? sim::run_replay_cuda(*source, opt, sink, cuda_opt)
                                                     : sim::run_replay(*source, opt, sink);
  if (csv) csv->finish();

  fmt::print("{}", sim::format_replay_table(result, row_bytes));
  if (result.lookahead_steps > 0) fmt::print("{}", sim::format_lookahead(result));
  std::string step_time_json;
  const std::string recommendation =
      advice_json(advise_args, vm, result, rescaled_sizes(opt.buffer_sizes, result.meta.top_k, advise_args.scenario),
                  trace_path, &step_time_json);
  if (advise_args.scenario.empty())
    fmt::print("\nno recommendation: choosing device_buffer_size needs a deployment (HBM per request, PCIe shared by "
               "the batch, the TPOT SLO); pass --scenario S, or run `hisparse advise --scenario S --trace {}`\n",
               trace_path);
  if (!out_dir.empty()) {
    write_file_atomically((fs::path(out_dir) / "replay.json").string(),
                               sim::replay_json(result, row_bytes, recommendation, step_time_json));
    write_file_atomically((fs::path(out_dir) / "replay.csv").string(), sim::replay_csv(result));
    for (const char* png : {"replay_hit_rate.png", "replay_misses.png"}) fs::remove(fs::path(out_dir) / png);
    if (!vm.count("no-plots")) {
      run_plot_script("plot_replay.py", out_dir, "replay");
    }
    fmt::print("wrote {}/replay.json, replay.csv{}\n", out_dir,
               vm.count("no-plots") ? "" : ", replay_hit_rate.png, replay_misses.png");
  }
  if (!csv_path.empty()) fmt::print("wrote {}\n", csv_path);
  // The whole command, as a user times it (from here: options, trace opening, replay, table, files, plots).
  fmt::print("{}", sim::format_replay_speed(result, std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                                                    t_command).count()));
  if (backend == "cuda") {
    const sim::ReplayCudaTiming t = sim::last_replay_cuda_timing();
    fmt::print("cuda (measured): swap-in kernels ran {:.4f} s: {:.1f} M entries/s on the GPU; {} requests side by side, "
               "{} steps in flight; device start {:.3f} s (overlapping the first reads), host waited for the GPU "
               "{:.3f} s\n",
               t.kernel_seconds, static_cast<double>(result.entries) / std::max(t.kernel_seconds, 1e-9) / 1e6, t.lanes,
               t.slots, t.device_start_seconds, t.host_wait_seconds);
  }
  return 0;
}

}  // namespace hisparse::apps
