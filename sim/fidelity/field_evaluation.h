// @brief What a field point's figures become: the tool's value of each metric from the plan's closed-form step model
// (StepTimeModel) and capacity plan, or from a serving run's summary; the signed error against the published figure
// or range; and the status against the point's band and its recorded error (docs/fidelity.md). The loading (scenario,
// cost terms, calibrations, miss curves, simulation set-up) is sim/api/fidelity_request.cpp's, which reuses what
// `plan` and `simulate` load, so a figure here is the one those commands print.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/fidelity/field_set.h"
#include "sim/fidelity/step_breakdown.h"
#include "sim/plan/capacity_plan.h"

namespace hisparse::sim {

/// Requests the busiest rank holds when `concurrency` requests share an instance of `ranks` dp ranks.
int64_t busiest_rank_batch(int32_t concurrency, int ranks);
/// TPOT (ms) of the step where the instance holds `concurrency` requests of `context` tokens, the busiest rank
/// busiest_rank_batch(concurrency) of them.
double model_tpot_ms(const StepTimeModel& model, int32_t concurrency, int64_t context);
/// Decode tokens/s of the instance at that step: every one of the `concurrency` requests makes one token per step.
double model_tokens_per_s(const StepTimeModel& model, int32_t concurrency, int64_t context);
/// Decode tokens/s of a colocated instance (prefill on the decode GPUs) kept busy by `concurrency` closed-loop clients
/// whose requests decode `output_tokens` each: every request's prefill pass (`prefill_ns`, as the serving engine
/// prices it: one request per dp rank per pass) takes the GPUs once per `output_tokens` decode steps, so
///   tokens/s = c × O / (O × step(c) + ⌈c / ranks⌉ × prefill).
double colocated_tokens_per_s(const StepTimeModel& model, int32_t concurrency, int64_t context, SimTime prefill_ns,
                              int64_t output_tokens);
/// max_concurrency of the plan's row for `mode` (the plan holds one sequence length).
int64_t plan_max_concurrency(const CapacityPlan& plan, KvMode mode);
/// The token pool per DP rank the plan sizes for `mode`: SGLang's max_total_num_tokens of the full-KV pool (DeepSeek-V4:
/// its full-token pool, the tokens its compressed pools are sized for), or with HiSparse the logical pool (every token
/// a request may hold); `formula` (may be null) gets the figure's formula.
double plan_pool_tokens(const CapacityPlan& plan, KvMode mode, std::string* formula);
/// The binding limit of that row (its label's "binding: X").
std::string plan_binding_limit(const CapacityPlan& plan, KvMode mode);

/// Signed (tool − published) / published × 100; against a range, 0 inside it and relative to the nearer bound outside.
double field_error_pct(const FieldPoint& point, double tool);
/// A gain at which both modes run the same batch (full KV holds every client) compares one step with another, so it
/// measures HiSparse's own cost per step: it is scored on the overhead it implies, 1 − r, as the signed difference in
/// percentage points from the published 1 − r (a range: 0 inside, else from the nearer bound); band kOverheadBandPp.
/// On the ratio, a ±15 % band would admit 0.83–1.12 around 0.971, an overhead from −12 % to 17 % for a published 2.9 %.
double overhead_error_pp(const FieldPoint& point, double tool_ratio);

/// How a point's error is expressed: relative % of the figure, or overhead percentage points (a same-batch gain).
enum class Scoring { kRelativePct, kOverheadPp };
/// The band the scored error is held to: the metric's (metric_band_pct) or kOverheadBandPp.
double scoring_band(const FieldPoint& point, Scoring scoring);

/// `hisparse fidelity --check` fails a point whose |error| exceeds |recorded_error_pct| + this, or that has no record.
inline constexpr double kRecordSlackPct = 0.5;

enum class PointStatus {
  kWithinBand,         // |error| <= tolerance_pct, and no worse than recorded
  kOk,                 // outside the band but no worse than recorded (a known error, not a regression)
  kWorseThanRecorded,  // |error| > |recorded| + kRecordSlackPct, or nothing recorded yet: --check fails it
};
const char* to_string(PointStatus status);
/// Against `band` and the point's recorded error; `error` is the scored one (the LOO error of a held-out point).
PointStatus field_status(const FieldPoint& point, double error, double band);

/// What the suite concludes of a point: an input (role: fitted), within its band, or outside it with or without its
/// measured reason (expected_miss).
enum class Verdict { kWithinBand, kExpectedMiss, kOutOfBand, kFitted };
const char* to_string(Verdict verdict);

/// The tool's range over a point's setup ranges (`plausible:`), every combination by the plan's closed form.
struct SetupRange {
  std::vector<std::string> items;  // "key {v1, v2}" per item
  size_t combos = 0;
  double min = 0, max = 0;
  bool covers = false;             // the published figure (or some of its range) lies in [min, max]
};

/// One point as fidelity reports it.
struct PointResult {
  FieldPoint point;
  double plan = 0;                          // the closed-form / capacity-plan value
  std::optional<double> simulate;           // the serving simulation's value (closed-loop runs, step metrics)
  bool scored_on_simulate = false;          // a simulate-scored run (FieldRun::scored_by): error_pct is simulate's
  double tool() const { return scored_on_simulate && simulate ? *simulate : plan; }  // the figure scored
  double error_pct = 0;                     // of `plan` against the published figure, in-fit (the files' values)
  Scoring scoring = Scoring::kRelativePct;  // error_pct is overhead percentage points for kOverheadPp
  double band = 0;                          // what the scored error is held to (scoring_band)
  std::optional<double> loo_error_pct;      // refit without this point (set when a fit uses it)
  std::string loo_note;                     // how the LOO value came about ("all_reduce… 40 (prior)")
  std::optional<SetupRange> range;          // the tool over the point's plausible setups
  /// The error bands apply to: the leave-one-out one when a fit uses a held-out point, else the in-fit one (a point
  /// no fit uses is held out already; a `role: fitted` point is an input, its LOO error shown but not scored).
  double scored_error() const { return loo_error_pct && !point.role_fitted ? *loo_error_pct : error_pct; }
  Verdict verdict() const;
  std::optional<double> plan_vs_sim_pct;    // (plan − simulate) / simulate × 100
  PointStatus status = PointStatus::kWorseThanRecorded;
  std::string label;                        // how the figure is labelled (modelled from which terms, binding limit)
  std::string note;                         // how it was computed where it is not obvious (full KV's concurrency)
  std::vector<std::string> fitted_by;       // cost terms of kind fitted whose fitted_to names this point
  bool fitted() const { return !fitted_by.empty(); }
  /// The status as printed: "(fitted)" after it when a term was fitted to this very point.
  std::string status_text() const;
};

/// One field run: its points and what the figures rest on.
struct RunResult {
  FieldRun run;
  std::string scenario;                     // the deployment's name
  std::string cost_line;                    // the cost terms and calibrations used (as plan prints them)
  std::string cost_terms_file;
  std::vector<TermSource> terms;            // each term's value, kind and source
  std::vector<FittedPoint> fitted_points;   // the fitted terms and the field points they were fitted to
  std::string miss_label;                   // where the plan's miss fraction comes from
  std::string miss_surface_file;            // the surface it was read from ("" when none)
  std::string simulate_note;                // the closed-loop runs (requests, why), "" when none ran
  std::vector<PointResult> points;
  /// DP-attention runs: the step of each distinct (mode, concurrency, context) their step points price, by term (set
  /// for the report's run only, never for a fit's trial runs; held by pointer, which also keeps GCC 12's
  /// -Wmaybe-uninitialized false positive on RunResult's inlined destructor away from the tests that build one).
  std::shared_ptr<const std::vector<StepBreakdown>> breakdowns;
  const std::vector<StepBreakdown>& step_breakdowns() const {
    static const std::vector<StepBreakdown> none;
    return breakdowns ? *breakdowns : none;
  }
};

/// "N measured, M calibrated, … ; assumed: a, b" over `terms` (the kinds the cost-model file gives).
std::string term_kinds_summary(const std::vector<TermSource>& terms);

/// "run/point: error e % (recorded r %)" for each point --check fails.
std::vector<std::string> check_failures(const std::vector<RunResult>& runs);
/// Points within their band, and all points.
std::pair<int, int> count_within_band(const std::vector<RunResult>& runs);

/// Held-out points (every point but `role: fitted`, scored by their LOO error): within band, expected misses, out of
/// band; and the fitted ones.
struct BandCounts {
  int held_out_within = 0, held_out = 0, fitted_within = 0, fitted = 0, expected_miss = 0, out_of_band = 0;
};
BandCounts count_within_band_by_fit(const std::vector<RunResult>& runs);
/// Sets each point's status from its scored error (after LOO errors are known).
void settle_status(RunResult& run);
/// "run/point: LOO error e outside its band ±b and no expected_miss" for each held-out point out of band.
std::vector<std::string> band_failures(const std::vector<RunResult>& runs);
/// Marks each point that a term of its run's cost model (kind fitted) names in fitted_to as "run/point".
void mark_fitted_points(RunResult& run);

}  // namespace hisparse::sim
