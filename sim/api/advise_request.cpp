// @brief The advise request's set-up, mixes and run (see advise_request.h).
#include "sim/api/advise_request.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "sim/api/advise_simulation.h"
#include "sim/cost/step/context_mix.h"
#include "sim/api/check_request.h"
#include "sim/miss/miss_surface.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

AdviceSetup load_advice_setup(const AdviseRequest& r, const std::string& command) {
  const ScenarioOverrides& o = r.setup.overrides;
  if (o.device_buffer_size || o.host_to_device_ratio || o.max_running_requests)
    throw_error("{}: device_buffer_size, host_to_device_ratio and max_running_requests are what advise chooses; "
                "give candidates with --buffer-sizes / --ratios instead", command);
  AdviceSetup out;
  ScenarioChoice choice = r.setup;
  choice.require_sparse_indexer = true;
  ScenarioSetup setup = load_scenario_setup(choice, command);
  out.scenario = std::move(setup.scenario);
  const Scenario& s = out.scenario;
  require_pools_fit(s, r.workload, command);  // `hisparse check` first: nothing is advised on pools that fail
  AdviseOptions& opt = out.options;
  opt.cost = setup.cost;
  opt.host_reserve_bytes = setup.host_reserve_bytes;
  out.info.cost_label = "modelled; " + setup.cost_line;
  out.info.warnings = setup.warnings;
  for (int32_t h : r.buffer_sizes)
    if (h < 1) throw_error("{}: --buffer-sizes: {} (expected >= 1)", command, h);
  for (int32_t x : r.ratios)
    if (x < 1) throw_error("{}: --ratios: {} (expected >= 1)", command, x);
  opt.buffer_sizes = r.buffer_sizes;
  opt.ratios = r.ratios;
  MissChoice misses = r.misses;
  misses.threads = std::max(1, misses.threads);
  LoadedMisses loaded = load_miss_curves(misses, s, advise_buffer_sizes(s, opt), command);
  out.misses = std::move(loaded.curves);
  out.info.miss_label = loaded.label;
  out.info.miss_source = out.misses->description();
  const bool surface_only = !misses.fraction && misses.trace.empty();
  const std::string surface = misses.surface.empty() ? default_miss_surface(s.deployment.hisparse.top_k) : misses.surface;
  opt.rule = parse_decision_rule(r.decision_rule, command + ": --decision-rule");
  opt.own_source = misses.fraction ? fmt::format("--miss-fraction {}", *misses.fraction)
                   : surface_only  ? surface
                                   : "trace " + std::filesystem::path(misses.trace).filename().string();
  opt.uncertainty = uncertainty_cases(s, opt.cost, surface_only ? surface : "", misses.policy, r.compare_miss_curves);
  return out;
}

std::vector<ContextMix> advice_mixes(const AdviseRequest& r, const Scenario& s, const std::string& command,
                                     const MissCurves* misses) {
  std::vector<ContextMix> mixes;
  if (r.seq_lens.empty() && r.workload.empty() && misses && misses->from_trace() &&
      !misses->trace_step_seq_lens().empty()) {
    // Every step record is one decode step of one request: the trace's decode-time-weighted mix (as replay's).
    if (r.mix_classes < 1) throw_error("{}: --mix-classes {} (expected >= 1)", command, r.mix_classes);
    std::vector<std::pair<double, double>> samples;
    samples.reserve(misses->trace_step_seq_lens().size());
    for (int32_t n : misses->trace_step_seq_lens()) samples.emplace_back(static_cast<double>(n), 1.0);
    mixes.push_back(context_mix_from_samples(
        std::move(samples), r.mix_classes,
        fmt::format("the trace's {} decode steps", misses->trace_step_seq_lens().size())));
  } else if (!r.seq_lens.empty() || r.workload.empty()) {
    const std::vector<int64_t>& lens = r.seq_lens.empty() ? default_seq_lens() : r.seq_lens;
    for (int64_t n : lens) {
      if (n < 1) throw_error("{}: --seq-lens: {} (expected >= 1)", command, n);
      ContextMix m = ContextMix::single(n);
      m.label = n % 1024 == 0 ? fmt::format("{}K", n / 1024) : std::to_string(n);
      mixes.push_back(m);
    }
  }
  if (!r.workload.empty()) {
    const Workload w = load_workload(r.workload);
    std::vector<std::pair<int64_t, int64_t>> io;
    // The first output token comes from prefill; decode steps see contexts input + 1 … input + output − 1.
    for (const auto& q : w.requests) io.emplace_back(int64_t{q.input_tokens} + 1, int64_t{q.output_tokens} - 1);
    if (r.mix_classes < 1) throw_error("{}: --mix-classes {} (expected >= 1)", command, r.mix_classes);
    mixes.push_back(decode_context_mix(io, 8, r.mix_classes,
                                       fmt::format("workload {} ({} requests)", w.name, w.requests.size())));
  }
  for (const auto& m : mixes)
    for (const auto& c : m.classes)
      if (c.seq_len > s.deployment.context_length)
        throw_error("{}: context length {} exceeds the deployment's context_length {} ({})", command, c.seq_len,
                    s.deployment.context_length, s.source);
  return mixes;
}

void add_extrapolation_warnings(AdviceSetup& setup, const std::vector<Advice>& advices) {
  for (const auto& a : advices) {
    const Candidate* rec = a.recommended();
    if (!rec || rec->mode != KvMode::kHiSparse) continue;
    const int32_t H = rec->buffer_size;
    // DeepSeek-V4 reads the miss model at its n / 4 C4 entries (StepTimeModel::misses_per_request).
    const bool c4 = family_of(setup.scenario).compressed_pools();
    std::vector<int64_t> lens;
    for (const auto& c : a.mix.classes)
      if (const int64_t e = c4 ? c.seq_len / 4 : c.seq_len; e > H && setup.misses->extrapolated(H, e)) lens.push_back(e);
    if (lens.empty()) continue;
    std::string list;
    for (int64_t n : lens) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
    setup.info.warnings.push_back(fmt::format(
        "{}: the recommendation (H = {}, H/K {:.3g}) reads the miss model outside the range it was measured over at "
        "{}n = {} (n/H {:.3g}–{:.3g}); it reads {}: the nearest measured fraction is held, capped by the steady-state "
        "bound (n − H)/(K − 1); {}",
        a.mix.label, H, static_cast<double>(H) / setup.scenario.deployment.hisparse.top_k,
        c4 ? "C4 entries (tokens / 4) " : "", list,
        static_cast<double>(lens.front()) / H, static_cast<double>(lens.back()) / H, setup.misses->measured_range(H),
        setup.misses->from_trace() ? "the given trace does not reach these lengths"
                                   : "a trace recorded at these lengths (--trace) would measure it"));
  }
}

LayoutsOutcome run_advise_layouts(const AdviseRequest& request) {
  const AdviceSetup setup = load_advice_setup(request, "advise");
  LayoutsOutcome out;
  out.scenario = request.setup.scenario;
  for (const LayoutWorkload& w : default_layout_workloads())
    out.comparisons.push_back(compare_layouts(setup.scenario, w, *setup.misses, setup.options));
  out.table = layout_table(out.comparisons);
  out.text = layouts_to_text(setup.scenario, out.comparisons);
  return out;
}

AdviseOutcome run_advise(const AdviseRequest& r, const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  AdviseOutcome out;
  out.setup = load_advice_setup(r, "advise");
  const std::vector<ContextMix> mixes = advice_mixes(r, out.setup.scenario, "advise", out.setup.misses.get());
  for (const auto& mix : mixes) {
    if (progress)
      progress(fmt::format("advise: evaluating {} settings at {}",
                           1 + advise_buffer_sizes(out.setup.scenario, out.setup.options).size() *
                                   advise_ratios(out.setup.scenario, out.setup.options).size(),
                           mix.label));
    out.advices.push_back(advise(out.setup.scenario, mix, *out.setup.misses, out.setup.options));
  }
  // The workload's advice (the last mix) is simulated as launched: its figure beside a closed-loop serving run.
  if (!r.workload.empty() && !out.advices.empty() && out.advices.back().recommended()) {
    if (progress)
      progress(fmt::format("advise: simulating the recommendation under {} ({} closed-loop clients)", r.workload,
                           out.advices.back().recommended()->concurrency));
    simulate_advice(r, out.advices.back());
  }
  out.setup.info.command_line = r.command_line;
  add_extrapolation_warnings(out.setup, out.advices);
  for (const Advice& a : out.advices) {
    out.recommendations.push_back(advice_recommendation(a, out.setup.scenario));
    for (AdviceTableRow& row : advice_table(a)) out.table.push_back(std::move(row));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace hisparse::sim
