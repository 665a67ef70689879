// @brief run_fidelity (see fidelity_request.h): each field run is loaded as `plan` and `simulate` load a scenario
// (load_scenario_setup with the run's overrides, the plan's miss curves, run_plan for capacity, load_simulation with
// fixed-length requests), and each point's metric is read off the same objects those commands print from.
#include "sim/api/fidelity_request.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel/task_pool.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/api/plan_request.h"
#include "sim/api/scenario_setup.h"
#include "sim/api/settings_table.h"
#include "sim/api/fidelity_fit.h"
#include "sim/api/simulate_request.h"
#include "sim/engine/sim_time.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/serving_simulation.h"

namespace hisparse::sim {

namespace {

constexpr const char* kCommand = "fidelity";

/// Sets the time-valued cost term `term` (a fit's trial value; fits name only such terms, field_fits.h).
void set_cost_term(CostParams& cost, const std::string& term, SimTime ns, const std::string& where) {
  SimTime CostParams::*member = cost_time_term(term);
  if (!member) throw_error("{}: cost term {} is not a time: a fit can only vary a latency or duration", where, term);
  cost.*member = ns;
}

ScenarioChoice choice_of(const FidelityRequest& r, const FieldRun& run) {
  ScenarioChoice c;
  c.scenario = run.deployment;
  c.cost_params = r.cost_params;
  c.calibration = r.calibration;
  c.step_calibration = r.step_calibration;
  c.op_tables = r.op_tables;
  c.overlap = r.overlap;
  // The run's `overrides:` through the settings table's reader (the same parse and ranges as the flags and Python);
  // a cost setting a field file names is that run's own, so it comes after the request's.
  read_settings_yaml(run.overrides, run.file, "overrides", c);
  return c;
}

/// What a point reads off one serving run: the summary, the prompt + output tokens of the finished requests over the
/// makespan per instance (FieldRun::throughput total_makespan), and the preemptions (sim/serving/retraction.cpp).
struct ServedRun {
  ServingSummary summary;
  double total_tokens_per_s = 0;
  std::string retraction = "none";
  int64_t retractions = 0, recomputed_tokens = 0;
  SimTime recompute_ns = 0, makespan = 0;
};

ServedRun served_run(const ServingResult& r, const Scenario& sc) {
  ServedRun s;
  s.summary = summarize(r, sc);
  int64_t tokens = 0;
  for (const RequestOutcome& o : r.requests)
    if (o.finish >= 0) tokens += int64_t{o.input_tokens} + o.output_tokens;
  const double t = ns_to_seconds(r.makespan);
  if (t > 0) s.total_tokens_per_s = static_cast<double>(tokens) / t / std::max(1, r.decode_instances);
  s.retraction = r.retraction;
  s.retractions = r.retractions;
  s.recomputed_tokens = r.recomputed_tokens;
  s.recompute_ns = r.recompute_ns;
  s.makespan = r.makespan;
  return s;
}

/// Everything one run's points read from, loaded once.
class RunRoutes {
 public:
  RunRoutes(const FidelityRequest& r, const FieldRun& run, const std::function<void(const std::string&)>& progress,
            const FieldTrial& trial)
      : request_(r), run_(run), progress_(progress), trial_(trial),
        setup_(load_scenario_setup(choice_of(r, run), where())) {
    miss_choice_ = r.misses;
    // A trial value of a fitted cost term replaces the file's (the step models below read setup_.cost, the serving
    // runs their own copy, which run_serving gives the same values).
    apply_trial_cost(setup_.cost);
    if (auto it = trial.miss_steady_scale.find(run.name); it != trial.miss_steady_scale.end())
      miss_choice_.steady_scale = it->second;
    const Scenario& s = setup_.scenario;
    full_ = std::make_unique<StepTimeModel>(s, setup_.cost, false, nullptr);
    if (s.model.has_sparse_indexer()) {
      // The plan's miss curves at the deployment's H (what run_plan loads for the same choice).
      const int32_t H = s.deployment.hisparse.device_buffer_size;
      misses_ = load_miss_curves(miss_choice_, s, {H}, where());
      const MissCurves* curves = misses_.curves.get();
      hisparse_ = std::make_unique<StepTimeModel>(s, setup_.cost, true,
                                                  [curves, H](int64_t n) { return curves->fraction(H, n); });
    }
    if (!s.deployment.pd_disaggregation) {
      // Colocated: each request's prompt is prefilled on the decode instance, as the serving engine runs it (one
      // chunked pass over the instance's GPUs, sim/serving/prefill.cpp).
      prefill_scenario_ = s;
      prefill_scenario_.deployment.prefill = s.deployment.decode;
      prefill_scenario_.deployment.prefill.count = 0;
      prefill_ns_ = DecodeCostModel(prefill_scenario_, setup_.cost, false).prefill_time(run.input_tokens);
    }
  }

  /// Prefill of one request on the decode GPUs (colocated runs; 0 under PD, where other GPUs prefill).
  SimTime colocated_prefill_ns() const { return prefill_ns_; }

  const ScenarioSetup& setup() const { return setup_; }
  const std::string& miss_label() const { return misses_.label; }
  const std::string& miss_surface_file() const { return misses_.surface_file; }
  const std::vector<std::string>& miss_fitted_to() const { return misses_.fitted_to; }

  const StepTimeModel& model(KvMode mode, const FieldPoint& p) const {
    if (mode == KvMode::kFull) return *full_;
    if (!hisparse_)
      throw_error("{}: point '{}' (line {}): model {} has no sparse indexer, so HiSparse does not apply", run_.file,
                  p.id, p.line, setup_.scenario.model.name);
    return *hisparse_;
  }

  /// The capacity plan at one context (`plan --seq-lens context`, the deployment's own H and ratio).
  const CapacityPlan& plan(int64_t context, bool memory_only) {
    auto& slot = plans_[{context, memory_only}];
    if (!slot) {
      PlanRequest q;
      q.setup = choice_of(request_, run_);
      q.misses = miss_choice_;
      q.seq_lens = {context};
      q.single_setting = true;
      q.memory_only = memory_only;
      q.command = where();
      slot = std::make_unique<PlanOutcome>(run_plan(q));
    }
    return slot->plan;
  }

  /// Runs the serving simulations `keys` (mode, clients per decode instance) not run yet, side by side on the
  /// machine's cores: each is its own engine over the read-only set-up, so the results do not depend on the order.
  void run_serving(std::vector<std::pair<KvMode, int32_t>> keys) {
    keys.erase(std::remove_if(keys.begin(), keys.end(),
                              [this](const auto& k) { return served_.count({k.first == KvMode::kHiSparse, k.second}); }),
               keys.end());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (keys.empty()) return;
    if (!sim_) {
      SimulateRequest q;
      q.setup = choice_of(request_, run_);
      q.misses = miss_choice_;
      q.fixed_input_tokens = run_.input_tokens;
      q.fixed_output_tokens = run_.output_tokens;
      sim_ = std::make_unique<SimulationSetup>(load_simulation(q, where()));
      apply_trial_cost(sim_->cost);
    }
    std::vector<std::unique_ptr<ServedRun>> out(keys.size());
    std::mutex print;
    // A failure is the lowest failing key's, whichever thread got there first (core/parallel/task_pool.h).
    parallel_for(keys.size(), hardware_threads(), [&](size_t i) { out[i] = serve(keys[i].first, keys[i].second, print); });
    for (size_t i = 0; i < keys.size(); ++i) {
      served_[{keys[i].first == KvMode::kHiSparse, keys[i].second}] = std::move(out[i]);
    }
  }

  /// The serving run with `clients` closed-loop clients per decode instance in `mode` (run_serving first).
  const ServedRun& simulate_at(KvMode mode, int32_t clients) {
    run_serving({{mode, clients}});
    return *served_.at({mode == KvMode::kHiSparse, clients});
  }

 private:
  std::unique_ptr<ServedRun> serve(KvMode mode, int32_t clients, std::mutex& print) const {
    const int32_t instances = std::max(1, sim_->scenario.deployment.decode.count);
    ClientSpec c;
    c.concurrency = clients * instances;
    c.requests = int64_t{kFidelityWaves} * c.concurrency;
    const auto t0 = std::chrono::steady_clock::now();
    const ServingResult result = simulate(*sim_, mode, sim_->cost.overlap, c, /*record_steps=*/false);
    auto served = std::make_unique<ServedRun>(served_run(result, sim_->scenario));
    if (progress_) {
      const std::lock_guard<std::mutex> lock(print);
      progress_(fmt::format("fidelity: simulate {} {} at concurrency {} ({} requests): TPOT p50 {:.2f} ms, {:.0f} "
                            "tok/s per instance, {} preemptions ({:.1f} s)",
                            run_.name, to_string(mode), clients, c.requests, served->summary.tpot_ms.p50,
                            served->summary.tokens_per_s_per_instance, served->retractions,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
    }
    return served;
  }

  std::string where() const { return fmt::format("{} {}", kCommand, run_.file); }

  void apply_trial_cost(CostParams& cost) const {
    if (auto it = trial_.cost_terms.find(run_.name); it != trial_.cost_terms.end())
      for (const auto& [term, ns] : it->second) set_cost_term(cost, term, ns, where());
    if (auto it = trial_.efficiency_scale.find(run_.name); it != trial_.efficiency_scale.end())
      set_efficiency_scale(cost, it->second);
  }

  const FidelityRequest& request_;
  const FieldRun& run_;
  const std::function<void(const std::string&)>& progress_;
  const FieldTrial& trial_;
  ScenarioSetup setup_;
  MissChoice miss_choice_;  // the request's, with a trial's steady scale
  LoadedMisses misses_;
  std::unique_ptr<StepTimeModel> full_, hisparse_;
  Scenario prefill_scenario_;
  SimTime prefill_ns_ = 0;
  std::map<std::pair<int64_t, bool>, std::unique_ptr<PlanOutcome>> plans_;
  std::unique_ptr<SimulationSetup> sim_;
  std::map<std::pair<bool, int32_t>, std::unique_ptr<ServedRun>> served_;
};

/// A mode's concurrency when `clients` are offered: the rest queue, as a server admits what its pools hold.
int32_t admitted_concurrency(RunRoutes& routes, const RunResult& out, const FieldPoint& p, KvMode mode) {
  const int64_t fit = plan_max_concurrency(routes.plan(p.context, /*memory_only=*/true), mode);
  if (fit < 1)
    throw_error("{}: point '{}' (line {}): {} fits no request of {} tokens on {}, so the gain is undefined",
                out.run.file, p.id, p.line, to_string(mode), p.context, out.scenario);
  return static_cast<int32_t>(std::min<int64_t>(p.concurrency, fit));
}

/// The simulated tokens/s per instance a point is held against (FieldRun::throughput).
double simulated_tokens_per_s(const FieldRun& run, const ServedRun& s) {
  if (run.throughput == "total_makespan") return s.total_tokens_per_s;
  return run.throughput == "decode_steady" ? s.summary.decode_tokens_per_s.p50 : s.summary.tokens_per_s_per_instance;
}

/// The closed form's decode tokens/s as the run's throughput: with total_makespan each request's prompt counts too
/// (c requests of I + O tokens in the time their O decode tokens take).
double as_run_throughput(const FieldRun& run, double decode_tokens_per_s) {
  if (run.throughput != "total_makespan") return decode_tokens_per_s;
  const double O = std::max(1, run.output_tokens);
  return decode_tokens_per_s * (run.input_tokens + O) / O;
}

/// What the serving run did with the requests it preempted (FieldRun::scored_by simulate prints it beside the figure).
std::string preemption_note(const ServedRun& s) {
  if (s.retraction == "none") return "simulate: no retraction modelled (admission reserves whole requests)";
  return fmt::format("simulate ({}): {} preemptions, {} tokens prefilled again ({:.1f} s of recompute, {:.0f} % of the "
                     "{:.1f} s makespan)", s.retraction, s.retractions, s.recomputed_tokens, ns_to_seconds(s.recompute_ns),
                     s.makespan > 0 ? 100.0 * static_cast<double>(s.recompute_ns) / static_cast<double>(s.makespan) : 0.0,
                     ns_to_seconds(s.makespan));
}

PointResult evaluate_point(RunRoutes& routes, const RunResult& out, const FieldPoint& p, bool simulate_runs) {
  PointResult res;
  res.point = p;
  const std::string step_label = fmt::format(
      "modelled (closed-form step, cost terms {}; op tables: {}; miss fraction {})",
      out.cost_terms_file.empty() ? "built-in" : out.cost_terms_file,
      op_tables_summary(routes.setup().cost, routes.setup().scenario.hardware.name),
      out.miss_label.empty() ? "none (full KV)" : out.miss_label);
  // Decode tokens/s by the closed form: under PD the step alone; colocated, each request's prefill pass shares the
  // GPUs with the decode steps.
  const SimTime prefill_ns = routes.colocated_prefill_ns();
  auto tokens_per_s = [&](KvMode mode, int32_t c) {
    const StepTimeModel& m = routes.model(mode, p);
    return as_run_throughput(out.run, prefill_ns > 0
                                          ? colocated_tokens_per_s(m, c, p.context, prefill_ns, out.run.output_tokens)
                                          : model_tokens_per_s(m, c, p.context));
  };
  if (prefill_ns > 0 && !is_capacity_metric(p.metric) && p.metric != FieldMetric::kTpotMs)
    res.note = fmt::format("colocated: each request's prefill pass ({:.1f} ms for {} tokens, modelled) shares the GPUs "
                           "with its {} decode steps", prefill_ns * 1e-6, out.run.input_tokens, out.run.output_tokens);
  switch (p.metric) {
    case FieldMetric::kTpotMs:
      res.plan = model_tpot_ms(routes.model(p.mode, p), p.concurrency, p.context);
      if (simulate_runs) res.simulate = routes.simulate_at(p.mode, p.concurrency).summary.tpot_ms.p50;
      res.label = step_label;
      break;
    case FieldMetric::kTokensPerS:
      res.plan = tokens_per_s(p.mode, p.concurrency);
      if (simulate_runs) res.simulate = simulated_tokens_per_s(out.run, routes.simulate_at(p.mode, p.concurrency));
      res.label = step_label;
      break;
    case FieldMetric::kGain: {
      const int32_t full_c = admitted_concurrency(routes, out, p, KvMode::kFull);
      const int32_t sparse_c = admitted_concurrency(routes, out, p, KvMode::kHiSparse);
      res.plan = tokens_per_s(KvMode::kHiSparse, sparse_c) / tokens_per_s(KvMode::kFull, full_c);
      // Both modes at the offered batch: the ratio is HiSparse's own cost per step (overhead_error_pp).
      if (full_c == p.concurrency && sparse_c == p.concurrency) res.scoring = Scoring::kOverheadPp;
      for (auto [mode, c] : {std::pair{KvMode::kFull, full_c}, std::pair{KvMode::kHiSparse, sparse_c}})
        if (c < p.concurrency)
          res.note += std::string(res.note.empty() ? "" : "; ") +
                      fmt::format("{} runs {} of the {} (its largest fitting concurrency; the rest queue)",
                                  to_string(mode), c, p.concurrency);
      if (simulate_runs) {
        const double full_tps = simulated_tokens_per_s(out.run, routes.simulate_at(KvMode::kFull, p.concurrency));
        if (full_tps > 0)
          res.simulate =
              simulated_tokens_per_s(out.run, routes.simulate_at(KvMode::kHiSparse, p.concurrency)) / full_tps;
      }
      res.label = step_label;
      break;
    }
    case FieldMetric::kMaxConcurrency: {
      const CapacityPlan& plan = routes.plan(p.context, /*memory_only=*/false);
      res.plan = static_cast<double>(plan_max_concurrency(plan, p.mode));
      res.label = fmt::format("modelled (capacity plan, binding limit {})", plan_binding_limit(plan, p.mode));
      break;
    }
    case FieldMetric::kPoolTokens: {
      const CapacityPlan& plan = routes.plan(p.context, /*memory_only=*/false);
      std::string formula;
      res.plan = plan_pool_tokens(plan, p.mode, &formula);
      res.label = "modelled (memory budget: " + formula + ")";
      break;
    }
  }
  // A simulate-scored run (FieldRun::scored_by) is held to the serving run's figure, which says what it preempted.
  double scored = res.plan;
  if (out.run.scored_by == "simulate" && !is_capacity_metric(p.metric)) {
    if (res.simulate) {
      scored = *res.simulate;
      res.scored_on_simulate = true;
      res.label = "simulated (serving engine, scored on simulate; step " + res.label + ")";
      const ServedRun& s = routes.simulate_at(p.metric == FieldMetric::kGain ? KvMode::kFull : p.mode, p.concurrency);
      res.note += std::string(res.note.empty() ? "" : "; ") + preemption_note(s);
    } else {
      res.note += std::string(res.note.empty() ? "" : "; ") + "scored on the plan: the serving run is off (--no-simulate)";
    }
  }
  res.error_pct = res.scoring == Scoring::kOverheadPp ? overhead_error_pp(p, scored) : field_error_pct(p, scored);
  res.band = scoring_band(p, res.scoring);
  if (res.simulate && *res.simulate > 0) res.plan_vs_sim_pct = (res.plan - *res.simulate) / *res.simulate * 100;
  res.status = field_status(p, res.error_pct, res.band);
  return res;
}

/// A DP-attention run's step by term at each distinct (mode, concurrency, context) its step points price (a gain:
/// both modes at the concurrency each runs).
std::vector<StepBreakdown> dp_breakdowns(RunRoutes& routes, const RunResult& out) {
  std::vector<StepBreakdown> result;
  if (routes.setup().scenario.deployment.decode.dp_attention <= 1) return result;
  std::set<std::tuple<int, int32_t, int64_t>> seen;
  auto add = [&](KvMode mode, int32_t c, const FieldPoint& p) {
    if (!seen.insert({static_cast<int>(mode), c, p.context}).second) return;
    result.push_back(step_breakdown(routes.model(mode, p), routes.setup().cost, mode, c, p.context));
  };
  for (const FieldPoint& p : out.run.points) {
    if (is_capacity_metric(p.metric)) continue;
    if (p.metric == FieldMetric::kGain) {
      add(KvMode::kFull, admitted_concurrency(routes, out, p, KvMode::kFull), p);
      add(KvMode::kHiSparse, admitted_concurrency(routes, out, p, KvMode::kHiSparse), p);
    } else {
      add(p.mode, p.concurrency, p);
    }
  }
  return result;
}

std::vector<std::string> default_field_dirs() {
  std::string searched;
  for (const std::string& d : scenario_dirs()) {
    const std::string f = (std::filesystem::path(d) / "field").string();
    if (std::filesystem::is_directory(f)) return {f};
    searched += (searched.empty() ? "" : ", ") + f;
  }
  throw_error("fidelity: no field folder in the scenario directories (looked for {}); give --field",
              searched.empty() ? std::string("none found") : searched);
}

}  // namespace

std::vector<RunResult> evaluate_field_runs(const FidelityRequest& r, const std::vector<FieldRun>& runs,
                                           const FieldTrial& trial,
                                           const std::function<void(const std::string&)>& progress) {
  std::vector<RunResult> results;
  for (const FieldRun& run : runs) choice_of(r, run);  // every file's values checked before any run is evaluated
  for (const FieldRun& run : runs) {
    const auto wanted = [&](const FieldPoint& p) {
      return trial.points.empty() || trial.points.count(run.name + "/" + p.id) > 0;
    };
    if (std::none_of(run.points.begin(), run.points.end(), wanted)) continue;
    RunResult out;
    out.run = run;
    RunRoutes routes(r, run, progress, trial);
    const ScenarioSetup& setup = routes.setup();
    out.scenario = setup.scenario.deployment.name;
    out.cost_line = setup.cost_line;
    out.cost_terms_file = setup.cost.terms_file;
    out.terms = setup.cost.sources;
    out.fitted_points = setup.cost.fitted_points;
    for (const auto& [key, id] : run.derived_overrides) out.fitted_points.push_back({"override " + key, run.name + "/" + id});
    out.miss_label = routes.miss_label();
    out.miss_surface_file = routes.miss_surface_file();
    // A calibrated miss surface's level was fitted to field points: those points are not held out.
    for (const std::string& point : routes.miss_fitted_to())
      if (point.rfind(run.name + "/", 0) == 0) out.fitted_points.push_back({"miss surface level", point});
    bool steps = false;
    for (const FieldPoint& p : run.points) steps = steps || (wanted(p) && !is_capacity_metric(p.metric));
    const bool simulate_runs = r.simulate && run.closed_loop && steps &&
                               (!trial.serve_simulate_scored_only || run.scored_by == "simulate");
    if (simulate_runs)
      out.simulate_note = fmt::format(
          "serving simulation: closed-loop clients, every request {} in / {} out, {} requests per client (the first "
          "wave starts cold; the median TPOT is that of the steady waves); tokens/s: {}",
          run.input_tokens, run.output_tokens, kFidelityWaves,
          run.throughput == "decode_steady"
              ? "decode-side steady throughput (median over decode steps of requests / step time; no refill gaps)"
              : run.throughput == "total_makespan"
                    ? "prompt + output tokens of the finished requests over the makespan (each prompt once)"
                    : "finished tokens over the makespan");
    if (simulate_runs) {
      std::vector<std::pair<KvMode, int32_t>> keys;
      for (const FieldPoint& p : run.points) {
        if (!wanted(p) || is_capacity_metric(p.metric)) continue;
        routes.model(p.metric == FieldMetric::kGain ? KvMode::kHiSparse : p.mode, p);  // HiSparse applies (or throws)
        if (p.metric == FieldMetric::kGain) {
          keys.emplace_back(KvMode::kFull, p.concurrency);
          keys.emplace_back(KvMode::kHiSparse, p.concurrency);
        } else {
          keys.emplace_back(p.mode, p.concurrency);
        }
      }
      routes.run_serving(keys);
    }
    for (const FieldPoint& p : run.points)
      if (wanted(p)) out.points.push_back(evaluate_point(routes, out, p, simulate_runs));
    if (trial.breakdowns) out.breakdowns = std::make_shared<const std::vector<StepBreakdown>>(dp_breakdowns(routes, out));
    mark_fitted_points(out);
    results.push_back(std::move(out));
  }
  return results;
}

FidelityReport run_fidelity(const FidelityRequest& r, const std::function<void(const std::string&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  FidelityReport report;
  report.command_line = r.command_line;
  const std::vector<std::string> field = r.field.empty() ? default_field_dirs() : r.field;
  const std::vector<FieldRun> runs = load_field_set(field);
  FieldTrial report_trial;
  report_trial.breakdowns = true;
  report.runs = evaluate_field_runs(r, runs, report_trial, progress);
  for (const FieldRun& run : runs)
    for (const FieldPoint& p : run.pending) report.pending.push_back({run.name, run.file, p});
  // A fitted term naming a run that is loaded must name one of its points (a renamed point would silently count as
  // held out).
  for (const RunResult& run : report.runs)
    for (const FittedPoint& f : run.fitted_points)
      for (const RunResult& other : report.runs) {
        if (f.point.rfind(other.run.name + "/", 0) != 0) continue;
        const std::string id = f.point.substr(other.run.name.size() + 1);
        if (std::none_of(other.run.points.begin(), other.run.points.end(),
                         [&](const FieldPoint& p) { return p.id == id; }))
          throw_error("{}: cost term {} is fitted to {}, but {} has no point '{}'", run.cost_terms_file, f.term,
                      f.point, other.run.file, id);
      }
  // The suite's own fits (their refits and every point's leave-one-out error) and the setup ranges.
  const std::string fits = fits_file_of(r.fits, field);
  if (!fits.empty()) apply_field_fits(r, runs, load_field_fits(fits), report);
  evaluate_setup_ranges(r, runs, report);
  for (RunResult& run : report.runs) settle_status(run);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace hisparse::sim
