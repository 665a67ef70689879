// @brief The advice around a replay (see replay_advice.h): the deployment's checks before it, the step times and the
// advice after it.
#include "sim/api/replay_advice.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/io/output_file.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/api/advise_request.h"
#include "sim/api/scenario_overrides.h"
#include "sim/cost/step/context_mix.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/replay/replay_report.h"
#include "sim/replay/replay_step_time.h"

namespace hisparse::sim {

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


/// The advice and the step times (advise_replay's work): prints through `print`, fills out's advice fields.
void advise_from_replay(const ReplayRequest& request, const AdviseRequest& advice, int threads,
                        const std::vector<int32_t>& sizes, ReplayOutcome& out,
                        const std::function<void(const std::string&)>& print,
                        const std::function<void(int64_t, int64_t)>& stage_done) {
  const auto stage = [&](int64_t done) {
    if (stage_done) stage_done(done, kReplayAdviceStages);
  };
  stage(0);
  const ReplayResult& result = out.result;
  AdviseRequest a = advice;
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
  JsonWriter j;
  j.begin_object(JsonWriter::Layout::kInline);
  if (!rec) {
    j.key("device_buffer_size").null().member("reason", "no setting fits one request within the SLO").end_object();
    out.recommendation_json = j.str();
    return;
  }
  j.member("policy", a.misses.policy).member("context", advices.front().mix.label).member("setting", rec->name());
  j.member("device_buffer_size", rec->buffer_size).member("host_to_device_ratio", rec->ratio);
  j.member("max_running_requests", rec->per_rank * rank_layout(setup.scenario).ranks);
  j.key("goodput_tokens_per_s").fixed(rec->goodput, 3).member("sglang_flags", sglang_flags(*rec, setup.scenario));
  j.member("scenario", setup.scenario.deployment.name).member("decision_rule", to_string(advices.front().robustness.rule));
  j.member("robustness", advices.front().robustness.verdict).end_object();
  out.recommendation_json = j.str();
}

}  // namespace

ReplayAdvicePlan plan_replay_advice(const ReplayRequest& replay, const AdviseRequest& advice) {
  const std::string& scenario_name = advice.setup.scenario;
  if (scenario_name.empty()) throw_error("replay: the advice needs a deployment (--scenario S); none given");
  if (replay.page_size != 0)
    throw_error("replay: --page-size {} with --scenario: the advisor prices token rows; replay in pages without a "
                "deployment, or in tokens with one", replay.page_size);
  // The scenario with the advice's overrides (--kv-dtype, --page-size, ...): what the trace and its rows must match,
  // as the advice itself will see the deployment.
  Scenario s = load_scenario(scenario_name);
  apply_overrides(advice.setup.overrides, s, "replay");
  // The advice prices HiSparse's latent rows and indexer: a model without DSA's sparse indexer has neither.
  if (!s.model.has_sparse_indexer())
    throw_error("replay: --scenario {}: model {} has no sparse indexer ({} attention), so HiSparse does not apply "
                "and there is nothing to advise; replay without --scenario (pass --row-bytes for its KV row)",
                scenario_name, s.model.name, family_of(s).attention_label());
  ReplayAdvicePlan plan;
  plan.row_bytes = replay.row_bytes_given ? replay.row_bytes : latent_row_bytes(s.model, s.deployment.kv_dtype);
  plan.scenario_top_k = s.deployment.hisparse.top_k;
  const traces::TraceMeta meta = traces::open_trace(replay.trace, replay_trace_open_options(replay))->meta();
  if (meta.top_k != plan.scenario_top_k && !advice.misses.rescale_trace_top_k)
    throw_error("replay: trace {} has top_k {} but scenario {} runs top_k {}: its misses would not describe that "
                "deployment; replay a trace recorded at top_k {}, or pass --rescale-trace-top-k to apply it at the "
                "same H/K",
                replay.trace, meta.top_k, s.deployment.name, plan.scenario_top_k, plan.scenario_top_k);
  // A trace of another model's depth (61 DeepSeek-V3.2 layers read for 78-layer GLM-5) still replays: its misses
  // per step-layer are applied to every layer of this model, the average layer standing for all. Said, not silent.
  const int32_t L = meta.layers;
  const int group = std::max(1, s.model.topk_layer_group);
  const int selecting = s.model.topk_anchor_layers();
  if (L != s.model.layers && L != s.model.kv_layers() && L != selecting)
    plan.warning = fmt::format(
        "warning: trace {} has {} layers but model {} (scenario {}) has {}{}: the advice applies the trace's misses "
        "per step-layer to every one of the model's layers; record the trace on {} for its own layers\n",
        replay.trace, L, s.model.name, s.deployment.name, s.model.layers,
        group > 1 ? fmt::format(" ({} selecting top-k)", selecting) : std::string(), s.model.name);
  return plan;
}

std::string advise_replay(const ReplayRequest& replay, ReplayOutcome& outcome, const AdviseRequest& advice,
                          const ReplayAdviceHooks& hooks) {
  const ReplayAdvicePlan plan = plan_replay_advice(replay, advice);
  std::vector<int32_t> sizes = replay.buffer_sizes;
  std::sort(sizes.begin(), sizes.end());
  const int threads =
      replay.threads > 0 ? replay.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string text;
  const auto print = [&](const std::string& piece) {
    text += piece;
    if (hooks.print) hooks.print(piece);
  };
  advise_from_replay(replay, advice, threads, rescaled_sizes(sizes, outcome.result.meta.top_k, plan.scenario_top_k),
                     outcome, print, hooks.stage_done);
  outcome.text += text;
  outcome.json = replay_json(outcome.result, outcome.row_bytes, outcome.recommendation_json, outcome.step_time_json);
  return text;
}

}  // namespace hisparse::sim
