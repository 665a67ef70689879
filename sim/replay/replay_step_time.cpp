// @brief model_replay_step_times and its outputs (see replay_step_time.h).
#include "sim/replay/replay_step_time.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "sim/cost/step/step_time_model.h"

namespace hisparse::sim {

namespace {

/// Nearest rank, as histogram_quantile: the smallest value with at least ceil(q * N) values at or below it.
double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))));
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace

ReplayStepTimeReport model_replay_step_times(const Scenario& scenario, const CostParams& cost, const ReplayResult& r,
                                             int64_t batch, const std::string& assumption) {
  if (batch < 1) throw_error("replay: step time priced for a batch of {} requests (expected >= 1)", batch);
  ReplayStepTimeReport out;
  out.deployment = scenario.deployment.name;
  out.slo_ms = scenario.deployment.tpot_slo_ms;
  out.batch = batch;
  out.assumption = assumption;
  const int64_t trace_k = r.meta.top_k, trace_layers = r.meta.layers;
  const int64_t scenario_k = scenario.deployment.hisparse.top_k;
  for (const auto& s : r.configs) {
    if (s.step_misses.size() != r.step_seq_lens.size())
      throw_error("replay: {} H={}: {} per-step miss counts for {} decode steps (internal error)", s.policy,
                  s.buffer_size, s.step_misses.size(), r.step_seq_lens.size());
    ReplayStepTime t;
    t.policy = s.policy;
    t.buffer_size = s.buffer_size;
    t.scenario_buffer_size = static_cast<int32_t>(std::max<int64_t>(
        scenario_k, std::llround(static_cast<double>(s.buffer_size) * static_cast<double>(scenario_k) /
                                 static_cast<double>(trace_k))));
    Scenario sc = scenario;
    sc.deployment.hisparse.device_buffer_size = t.scenario_buffer_size;
    // The model asks for a per-layer miss fraction of n; each step sets the one it replayed before asking.
    double fraction = 0;
    const StepTimeModel model(sc, cost, true, [&fraction](int64_t) { return fraction; });
    std::unordered_map<uint64_t, double> memo;  // (n, misses) -> ms: traces repeat both
    std::vector<double> ms, steady, cold;
    ms.reserve(r.step_seq_lens.size());
    for (size_t j = 0; j < r.step_seq_lens.size(); ++j) {
      const int64_t n = r.step_seq_lens[j];
      const int64_t m = s.step_misses[j];
      const uint64_t key = (static_cast<uint64_t>(n) << 32) | static_cast<uint32_t>(m);
      auto it = memo.find(key);
      if (it == memo.end()) {
        const int64_t can_miss = (std::min(n, trace_k) - 1) * trace_layers;
        fraction = can_miss > 0 ? static_cast<double>(m) / static_cast<double>(can_miss) : 0.0;
        it = memo.emplace(key, static_cast<double>(model.step(out.batch, n).tpot_ns) / 1e6).first;
      }
      ms.push_back(it->second);
      const bool is_cold = j < r.step_index.size() && cold_start_step(r.step_index[j], s.buffer_size, r.meta.top_k);
      (is_cold ? cold : steady).push_back(it->second);
    }
    t.steps = static_cast<int64_t>(ms.size());
    for (double v : ms) {
      t.mean_ms += v;
      t.over_slo += v > out.slo_ms;
    }
    if (!ms.empty()) t.mean_ms /= static_cast<double>(ms.size());
    std::sort(ms.begin(), ms.end());
    t.p50_ms = quantile_sorted(ms, 0.5);
    t.p99_ms = quantile_sorted(ms, 0.99);
    t.max_ms = ms.empty() ? 0 : ms.back();
    t.cold_steps = static_cast<int64_t>(cold.size());
    std::sort(steady.begin(), steady.end());
    std::sort(cold.begin(), cold.end());
    t.steady_p50_ms = steady.empty() ? 0 : quantile_sorted(steady, 0.5);
    t.steady_p99_ms = steady.empty() ? 0 : quantile_sorted(steady, 0.99);
    t.cold_p99_ms = cold.empty() ? 0 : quantile_sorted(cold, 0.99);
    out.configs.push_back(std::move(t));
  }
  return out;
}

std::string format_step_times(const ReplayStepTimeReport& rep) {
  std::string o = fmt::format(
      "\nstep time on {} (MODELLED by the planner's step model from each decode step's replayed misses, not "
      "measured): a batch of {} requests per DP rank ({}), each at the step's context length with the step's "
      "replayed misses; TPOT SLO {:g} ms\n",
      rep.deployment, rep.batch, rep.assumption, rep.slo_ms);
  o += "percentiles apart: steady state, and cold start (each request's first step and warm-up steps 1..ceil(H/K), "
       "while its buffer fills)\n";
  o += fmt::format("{:<12} {:>6} {:>9} {:>9} {:>11} {:>11} {:>12} {:>9}  {}\n", "policy", "H", "priced H", "mean ms",
                   "steady p50", "steady p99", "cold p99 ms", "max ms", "steps over SLO");
  auto ms = [](double v, int64_t n) { return n > 0 ? fmt::format("{:.2f}", v) : std::string("-"); };
  for (const auto& t : rep.configs) {
    const int64_t steady = t.steps - t.cold_steps;
    o += fmt::format("{:<12} {:>6} {:>9} {:>9.2f} {:>11} {:>11} {:>12} {:>9.2f}  {} of {}{}\n", t.policy,
                     t.buffer_size, t.scenario_buffer_size, t.mean_ms, ms(t.steady_p50_ms, steady),
                     ms(t.steady_p99_ms, steady), ms(t.cold_p99_ms, t.cold_steps), t.max_ms, t.over_slo, t.steps,
                     steady > 0 && t.steady_p99_ms > rep.slo_ms ? " (steady p99 over the SLO)" : "");
  }
  return o;
}

std::string step_times_json(const ReplayStepTimeReport& rep) {
  using Layout = JsonWriter::Layout;
  JsonWriter j;
  j.begin_object(Layout::kInline).member("modelled", true);
  j.member("model", "planner step model (sim/cost/step/step_time_model)").member("deployment", rep.deployment);
  j.key("tpot_slo_ms").fixed(rep.slo_ms, 3).member("batch_per_rank", rep.batch).member("assumption", rep.assumption);
  j.key("configs").begin_array(Layout::kInline);
  for (const auto& t : rep.configs) {
    j.begin_object(Layout::kInline).member("policy", t.policy).member("buffer_size", t.buffer_size);
    j.member("priced_buffer_size", t.scenario_buffer_size).member("steps", t.steps).key("mean_ms").fixed(t.mean_ms, 4);
    j.key("p50_ms").fixed(t.p50_ms, 4).key("p99_ms").fixed(t.p99_ms, 4).key("max_ms").fixed(t.max_ms, 4);
    j.member("steps_over_slo", t.over_slo).key("steady").begin_object(Layout::kInline);
    j.member("steps", t.steps - t.cold_steps).key("p50_ms").fixed(t.steady_p50_ms, 4);
    j.key("p99_ms").fixed(t.steady_p99_ms, 4).end_object().key("cold_start").begin_object(Layout::kInline);
    j.member("steps", t.cold_steps).key("p99_ms").fixed(t.cold_p99_ms, 4).end_object().end_object();
  }
  j.end_array().end_object();
  return j.str();
}

}  // namespace hisparse::sim
