// @brief The replay request's checks, set-up, run and advice (see replay_request.h).
#include "sim/api/replay_request.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/io/output_file.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "cpu_ref/policies/registry.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/api/advise_request.h"
#include "sim/api/scenario_overrides.h"
#include "sim/cost/context_mix.h"
#include "sim/cost/rank_layout.h"
#include "sim/replay/replay_report.h"
#include "sim/replay/replay_step_time.h"
#include "sim/replay/replay_v2_session.h"
#include "traces/page_trace_source.h"
#include "traces/shared_topk_source.h"

namespace hisparse::sim {

namespace {

/// One line per hisparse-v2 policy: the SGLang coordinator whose admission rules it replays (docs/swap_in.md).
std::string v2_coordinator_note(const ReplayOptions& opt) {
  std::string out;
  for (const auto& p : opt.policies) {
    const std::string spec = cpu_ref::with_v2_coordinator(p, opt.v2_coordinator);
    const size_t colon = spec.find(':');
    if (spec.substr(0, colon) != "hisparse-v2") continue;
    const cpu_ref::HisparseV2Spec v2 = cpu_ref::parse_hisparse_v2_arg(spec.substr(colon + 1));
    const bool current = v2.rules == V2Coordinator::kCurrent;
    out += fmt::format(
        "{}: admission as SGLang's {} V2 coordinator (hisparse_v2_coordinator.py at {}): {}\n", p,
        cpu_ref::v2_coordinator_name(v2.rules), current ? kV2CurrentCommit : kV2OlderCommit,
        current ? "a request whose evicted prefix is shorter than the buffer H runs as standard (all resident)"
                : "every request with a whole prompt page has its page-aligned prefix evicted, whatever H");
  }
  return out;
}

/// The V2 session's pools from the request, checked (docs/swap_in.md, "Admission over a trace").
cpu_ref::V2SessionPools v2_session_pools(const ReplayRequest& r) {
  if (r.v2_device_pool_tokens < 1 || r.v2_host_pool_tokens < 0 || r.v2_indexer_pages < -1 || r.v2_node_tokens < 0)
    throw_error("replay: V2 session: --v2-device-pool-tokens {} (expected >= 1), --v2-host-pool-tokens {} (>= 0, 0 "
                "unbounded), --v2-indexer-pages {} (>= 0, or -1 unbounded), --v2-node-tokens {} (>= 0, 0 one node)",
                r.v2_device_pool_tokens, r.v2_host_pool_tokens, r.v2_indexer_pages, r.v2_node_tokens);
  if (r.backend != "cpu" || r.page_size != 0)
    throw_error("replay: the V2 session (--v2-device-pool-tokens) runs on --backend cpu in tokens only (got --backend "
                "{}, --page-size {})", r.backend, r.page_size);
  return {r.v2_device_pool_tokens, r.v2_host_pool_tokens, r.v2_indexer_pages, r.v2_node_tokens};
}

}  // namespace

namespace {

/// The replayed sizes in the scenario's units: the same H/K when the trace is applied at another top_k.
std::vector<int32_t> rescaled_sizes(const std::vector<int32_t>& sizes, int32_t trace_k, int32_t K) {
  std::vector<int32_t> out;
  for (int32_t h : sizes) {
    const auto v = static_cast<int32_t>(std::llround(static_cast<double>(h) * K / trace_k));
    if (v >= K && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

/// Collects the printed text and hands each piece to the caller as it comes.
struct Printer {
  const ReplayHooks& hooks;
  std::string& text;
  void operator()(const std::string& s) const {
    text += s;
    if (hooks.print) hooks.print(s);
  }
};

/// The replay's recommendation: the advice for the trace's own context mix (or seq_lens / workload) on the
/// deployment, with the replayed trace as the miss model over the replayed buffer sizes. Before it, the modelled
/// step time of every replayed decode step on the deployment.
void advise_from_replay(const ReplayRequest& request, int threads, const std::vector<int32_t>& sizes,
                        ReplayOutcome& out, const Printer& print,
                        const std::function<void(int64_t, int64_t)>& stage_done) {
  const auto stage = [&](int64_t done) {
    if (stage_done) stage_done(done, kReplayAdviceStages);
  };
  stage(0);
  const ReplayResult& result = out.result;
  AdviseRequest a = request.advice;
  a.misses.trace = request.trace;
  a.misses.policy = recommended_policy(result);
  a.misses.threads = threads;
  a.buffer_sizes = sizes;
  AdviceSetup setup = load_advice_setup(a, "replay");
  stage(1);
  std::vector<ContextMix> mixes;
  if (!a.seq_lens.empty() || !a.workload.empty()) {
    mixes = advice_mixes(a, setup.scenario, "replay");
  } else {
    // Every step record is one decode step of one request: the trace's own decode-time-weighted mix (the replay kept
    // each step's seq_len, so the trace is not read a second time).
    std::vector<std::pair<double, double>> samples;
    samples.reserve(result.step_seq_lens.size());
    for (int32_t n : result.step_seq_lens) samples.emplace_back(static_cast<double>(n), 1.0);
    mixes.push_back(context_mix_from_samples(std::move(samples), a.mix_classes,
                                             fmt::format("the trace's {} decode steps", result.decode_steps)));
  }
  std::vector<Advice> advices;
  for (const auto& m : mixes) advices.push_back(advise(setup.scenario, m, *setup.misses, setup.options));
  add_extrapolation_warnings(setup, advices);
  stage(2);
  const Candidate* rec = advices.front().recommended();
  // The step time is priced at a batch the deployment runs: its own cap when it sets one, else the concurrency the
  // advice below recommends (what a user would configure), else a request alone.
  const int mrr = setup.scenario.deployment.max_running_requests;
  const int64_t batch = mrr > 0 ? mrr : rec && rec->per_rank > 0 ? rec->per_rank : 1;
  const std::string why =
      mrr > 0 ? "the deployment's max_running_requests"
      : rec && rec->per_rank > 0
          ? fmt::format("the concurrency the advice recommends below, with {}", rec->name())
          : "one request alone: the deployment sets no max_running_requests and the advice recommends nothing";
  const ReplayStepTimeReport steps = model_replay_step_times(setup.scenario, setup.options.cost, result, batch, why);
  out.step_time_text = format_step_times(steps);
  out.step_time_json = step_times_json(steps);
  stage(3);
  print(out.step_time_text);
  print(fmt::format(
      "\nadvice for {} (device_buffer_size swept over the replayed sizes; misses from this replay, policy {}):\n{}",
      setup.scenario.deployment.name, a.misses.policy, advice_to_text(setup.scenario, advices, setup.info)));
  if (!rec) {
    out.recommendation_json =
        "{\"device_buffer_size\": null, \"reason\": \"no setting fits one request within the SLO\"}";
    return;
  }
  out.recommendation_json = fmt::format(
      "{{\"policy\": {}, \"context\": {}, \"setting\": {}, \"device_buffer_size\": {}, "
      "\"host_to_device_ratio\": {}, \"max_running_requests\": {}, \"goodput_tokens_per_s\": {:.3f}, "
      "\"sglang_flags\": {}, \"scenario\": {}, \"decision_rule\": \"{}\", \"robustness\": {}}}",
      json_quote(a.misses.policy), json_quote(advices.front().mix.label), json_quote(rec->name()), rec->buffer_size,
      rec->ratio, rec->per_rank * rank_layout(setup.scenario).ranks, rec->goodput,
      json_quote(sglang_flags(*rec, setup.scenario)), json_quote(setup.scenario.deployment.name),
      to_string(advices.front().robustness.rule), json_quote(advices.front().robustness.verdict));
}

}  // namespace

ReplayOutcome run_replay_request(const ReplayRequest& request, const ReplayHooks& hooks) {
  ReplayOutcome out;
  const Printer print{hooks, out.text};
  const std::string& scenario_name = request.advice.setup.scenario;
  const bool advise = !scenario_name.empty();

  traces::TraceOpenOptions open_opts;
  if (!request.initial_state.empty())
    open_opts.initial_state = traces::parse_initial_state(request.initial_state, "--initial-state");
  if (request.top_k) {
    if (*request.top_k < 1) throw_error("replay: --top-k {} must be >= 1", *request.top_k);
    open_opts.top_k = *request.top_k;
  }
  // The trace as a file (with its overrides) or as the caller's own source.
  const TraceOpener open_file = hooks.open_trace
                                    ? hooks.open_trace
                                    : TraceOpener([&request, open_opts] {
                                        return traces::open_trace(request.trace, open_opts);
                                      });
  // Declared shared layers (IndexShare): each takes its anchor's list, in every cursor.
  const int32_t topk_group = request.shared_topk_group, topk_offset = request.shared_topk_offset;
  const TraceOpener open_base = topk_group <= 1 ? open_file : TraceOpener([open_file, topk_group, topk_offset] {
    return std::unique_ptr<traces::TraceSource>(
        std::make_unique<traces::SharedTopkTraceSource>(open_file(), topk_group, topk_offset));
  });
  if (request.shared_topk_group < 1 || request.shared_topk_offset < 1)
    throw_error("replay: --shared-topk-group {} / --shared-topk-offset {}: expected both >= 1",
                request.shared_topk_group, request.shared_topk_offset);
  if (request.threads < 0) throw_error("replay: --threads {} (expected >= 1, or 0 = the hardware threads)", request.threads);
  refuse_output_over_input(request.per_step_csv, "--per-step-csv", request.trace, "--trace");
  const int threads =
      request.threads > 0 ? request.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t row_bytes = request.row_bytes;
  int32_t scenario_top_k = 0;
  if (advise) {
    if (hooks.open_trace)
      throw_error("replay: --scenario {}: the advice replays the trace file again at every buffer size; a trace "
                  "handed in as a source (not a file) cannot be advised on",
                  scenario_name);
    // The scenario with the advice's overrides (--kv-dtype, --page-size, ...): what the trace and its rows must match,
    // as the advice itself will see the deployment.
    Scenario s = load_scenario(scenario_name);
    apply_overrides(request.advice.setup.overrides, s, "replay");
    // The advice prices HiSparse's latent rows and indexer: a model without DSA's sparse indexer has neither.
    if (!s.model.has_sparse_indexer())
      throw_error("replay: --scenario {}: model {} has no sparse indexer ({} attention), so HiSparse does not apply "
                  "and there is nothing to advise; replay without --scenario (pass --row-bytes for its KV row)",
                  scenario_name, s.model.name, family_of(s).attention_label());
    if (!request.row_bytes_given) row_bytes = latent_row_bytes(s.model, s.deployment.kv_dtype);
    scenario_top_k = s.deployment.hisparse.top_k;
    const int32_t K = open_base()->meta().top_k;
    if (K != scenario_top_k && !request.advice.misses.rescale_trace_top_k)
      throw_error("replay: trace {} has top_k {} but scenario {} runs top_k {}: its misses would not describe that "
                  "deployment; replay a trace recorded at top_k {}, or pass --rescale-trace-top-k to apply it at the "
                  "same H/K",
                  request.trace, K, s.deployment.name, scenario_top_k, scenario_top_k);
    // A trace of another model's depth (61 DeepSeek-V3.2 layers read for 78-layer GLM-5) still replays: its misses
    // per step-layer are applied to every layer of this model, the average layer standing for all. Said, not silent.
    const int32_t L = open_base()->meta().layers;
    const int group = std::max(1, s.model.topk_layer_group);
    const int selecting = s.model.topk_anchor_layers();
    if (L != s.model.layers && L != s.model.kv_layers() && L != selecting)
      print(fmt::format("warning: trace {} has {} layers but model {} (scenario {}) has {}{}: the advice applies the "
                        "trace's misses per step-layer to every one of the model's layers; record the trace on {} for "
                        "its own layers\n",
                        request.trace, L, s.model.name, s.deployment.name, s.model.layers,
                        group > 1 ? fmt::format(" ({} selecting top-k)", selecting) : std::string(), s.model.name));
  }

  if (request.backend != "cpu" && request.backend != "cuda")
    throw_error("replay: --backend '{}' unknown (expected cpu or cuda)", request.backend);
  if (request.backend == "cuda" && !hooks.cuda)
    throw_error("replay: --backend cuda: this caller has no CUDA replay (the swap-in kernels are in target "
                "hisparse_replay_cuda, which the caller links and hands in as ReplayHooks::cuda)");
  if (request.lookahead_mb < 1 || request.lookahead_mb > (int64_t{1} << 30))
    throw_error("replay: --lookahead-mb {} must be in 1..2^30", request.lookahead_mb);
  std::unique_ptr<traces::TraceSource> source = open_base();
  ReplayOptions opt;
  opt.lookahead_bytes = static_cast<size_t>(request.lookahead_mb) << 20;
  opt.policies = request.policies;
  opt.v2_coordinator = cpu_ref::parse_v2_coordinator(request.v2_coordinator, "replay: --v2-coordinator");
  if (request.v2_device_pool_tokens != 0) opt.v2_pools = v2_session_pools(request);
  opt.buffer_sizes = request.buffer_sizes;
  std::sort(opt.buffer_sizes.begin(), opt.buffer_sizes.end());
  opt.threads = threads;
  opt.keep_step_rows = request.keep_step_rows || !request.per_step_csv.empty();
  const int32_t page_size = request.page_size;
  int32_t page_width = 0;
  if (page_size != 0) {
    traces::check_page_size(page_size, "replay: --page-size");
    if (advise)
      throw_error("replay: --page-size {} with --scenario: the advisor prices token rows; replay in pages without a "
                  "deployment, or in tokens with one", page_size);
    source = std::make_unique<traces::PageTraceSource>(std::move(source), page_size);
    page_width = source->meta().top_k;
    std::string map;
    for (int32_t& h : opt.buffer_sizes) {
      if (h % page_size != 0 || h / page_size < page_width)
        throw_error("replay: --buffer-sizes {} with --page-size {}: expected a multiple of {} tokens holding at least "
                    "the {} pages the widest layer list of {} touches (>= {} tokens)",
                    h, page_size, page_size, page_width, request.trace, int64_t{page_width} * page_size);
      map += fmt::format("{}{} tokens = {} pages", map.empty() ? "" : ", ", h, h / page_size);
      h /= page_size;
    }
    if (row_bytes > (int64_t{1} << 40) / page_size)
      throw_error("replay: --row-bytes {} x --page-size {} overflows the byte counters", row_bytes, page_size);
    row_bytes *= page_size;
    out.page_note = fmt::format(
        "page replay: pages of {} tokens; the table's top_k and buffer sizes are in PAGES: top_k {} pages (the "
        "widest layer list), H {}; a miss moves one page = {} B\n",
        page_size, page_width, map, row_bytes);
    print(out.page_note);
  }
  opt.row_bytes = row_bytes;
  opt.progress = hooks.progress;
  // Every cursor after the first reads the same trace, paged as the first (at the first's page width).
  const TraceOpener open_cursor = [open_base, page_size, page_width]() -> std::unique_ptr<traces::TraceSource> {
    auto s = open_base();
    if (page_width > 0) return std::make_unique<traces::PageTraceSource>(std::move(s), page_size, page_width);
    return s;
  };
  opt.open_trace = open_cursor;  // the CPU driver's lanes, when there are more threads than layers
  if (opt.v2_pools) opt = with_v2_schedules(opt, source->meta());  // the V2 session, before anything is replayed

  if (hooks.checked) hooks.checked();
  std::unique_ptr<StepCsvWriter> csv;
  if (!request.per_step_csv.empty()) csv = std::make_unique<StepCsvWriter>(request.per_step_csv);
  std::vector<ReplayConfigStats> config_names;
  for (const auto& p : opt.policies) {
    for (int32_t H : opt.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      config_names.push_back(s);
    }
  }
  const ReplayRowSink sink = [&](const ReplayRequestRows& rows) {
    if (hooks.rows) hooks.rows(rows);
    if (csv) csv->write(rows, config_names, row_bytes);
  };
  out.result = request.backend == "cuda" ? hooks.cuda(*source, opt, sink, open_cursor) : run_replay(*source, opt, sink);
  // No decode step, no selection: a hit rate is 0 / 0, not 100 % (issue 40 item 7). Refused before any output is
  // committed, in the CLI (non-zero exit) and in Python (an error) alike.
  if (out.result.decode_steps == 0)
    throw_error("replay: trace {} has no decode step (its requests have 0 steps): the hit rate is undefined "
                "(nothing was selected), not 100 %; expected a trace with at least one step",
                request.trace);
  if (csv) csv->finish();
  out.row_bytes = row_bytes;

  print(format_replay_table(out.result, row_bytes));
  print(v2_coordinator_note(opt));
  print(format_v2_session(opt));
  if (out.result.lookahead_steps > 0) print(format_lookahead(out.result));
  if (advise) {
    advise_from_replay(request, threads, rescaled_sizes(opt.buffer_sizes, out.result.meta.top_k, scenario_top_k), out,
                       print, hooks.advice_progress);
  } else {
    out.recommendation_json = no_deployment_recommendation_json();
    print(fmt::format("\nno recommendation: choosing device_buffer_size needs a deployment (HBM per request, PCIe "
                      "shared by the batch, the TPOT SLO); pass --scenario S, or run `hisparse advise --scenario S "
                      "--trace {}`\n",
                      request.trace));
  }
  out.json = replay_json(out.result, row_bytes, out.recommendation_json, out.step_time_json);
  out.csv = replay_csv(out.result);
  return out;
}

}  // namespace hisparse::sim
