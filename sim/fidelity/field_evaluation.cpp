// @brief The metric, error and status arithmetic of a field point (see field_evaluation.h).
#include "sim/fidelity/field_evaluation.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

int64_t busiest_rank_batch(int32_t concurrency, int ranks) {
  const int64_t r = std::max(1, ranks);
  return (int64_t{concurrency} + r - 1) / r;
}

double model_tpot_ms(const StepTimeModel& model, int32_t concurrency, int64_t context) {
  // The instance holds `concurrency` requests (its MoE phase carries that many tokens), the busiest rank ⌈c / ranks⌉:
  // below one request per rank the others idle, as in the serving engine; at a multiple of the ranks this is plan's
  // own step of ⌈c / ranks⌉ per rank.
  const StepEstimate e =
      model.step(busiest_rank_batch(concurrency, model.layout().ranks), ContextMix::single(context), concurrency);
  return static_cast<double>(e.tpot_ns) * 1e-6;
}

double model_tokens_per_s(const StepTimeModel& model, int32_t concurrency, int64_t context) {
  // The busiest rank sets the step; ranks holding fewer requests make fewer tokens in it.
  return concurrency / (model_tpot_ms(model, concurrency, context) * 1e-3);
}

double colocated_tokens_per_s(const StepTimeModel& model, int32_t concurrency, int64_t context, SimTime prefill_ns,
                              int64_t output_tokens) {
  const double O = static_cast<double>(std::max<int64_t>(1, output_tokens));
  const double passes = static_cast<double>(busiest_rank_batch(concurrency, model.layout().ranks));
  const double wave_s = O * model_tpot_ms(model, concurrency, context) * 1e-3 + passes * prefill_ns * 1e-9;
  return concurrency * O / wave_s;
}

namespace {

const PlanRow& plan_row_of(const CapacityPlan& plan, KvMode mode) {
  for (const PlanRow& r : plan.rows)
    if (r.mode == mode) return r;
  throw_error("fidelity: the plan of {} holds no {} row", plan.scenario.deployment.name, to_string(mode));
}

}  // namespace

int64_t plan_max_concurrency(const CapacityPlan& plan, KvMode mode) { return plan_row_of(plan, mode).max_concurrency; }

double plan_pool_tokens(const CapacityPlan& plan, KvMode mode, std::string* formula) {
  const Figure& f = mode == KvMode::kFull ? plan.budget.full_pool_tokens : plan.budget.logical_pool_tokens;
  if (formula) *formula = (mode == KvMode::kFull ? "full pool = " : "logical pool = ") + f.formula;
  return f.value;
}

std::string plan_binding_limit(const CapacityPlan& plan, KvMode mode) { return plan_row_of(plan, mode).binding_limit; }

double field_error_pct(const FieldPoint& p, double tool) {
  double ref = 0;
  if (p.published) {
    ref = *p.published;
  } else {
    const auto [lo, hi] = *p.published_range;
    if (tool >= lo && tool <= hi) return 0;
    ref = tool < lo ? lo : hi;
  }
  return (tool - ref) / ref * 100;
}

double overhead_error_pp(const FieldPoint& p, double tool_ratio) {
  const double tool = (1 - tool_ratio) * 100;
  if (p.published) return tool - (1 - *p.published) * 100;
  // A ratio range [lo, hi] is the overhead range [1 − hi, 1 − lo].
  const double lo = (1 - p.published_range->second) * 100, hi = (1 - p.published_range->first) * 100;
  if (tool >= lo && tool <= hi) return 0;
  return tool < lo ? tool - lo : tool - hi;
}

double scoring_band(const FieldPoint& p, Scoring s) {
  return s == Scoring::kOverheadPp ? kOverheadBandPp : metric_band_pct(p.metric);
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kWithinBand: return "within-band";
    case Verdict::kExpectedMiss: return "expected-miss";
    case Verdict::kOutOfBand: return "OUT-OF-BAND";
    case Verdict::kFitted: return "fitted";
  }
  return "?";
}

Verdict PointResult::verdict() const {
  if (point.role_fitted) return Verdict::kFitted;
  if (std::abs(scored_error()) <= band) return Verdict::kWithinBand;
  return point.expected_miss.empty() ? Verdict::kOutOfBand : Verdict::kExpectedMiss;
}

void settle_status(RunResult& run) {
  for (PointResult& p : run.points) p.status = field_status(p.point, p.scored_error(), p.band);
}

std::vector<std::string> band_failures(const std::vector<RunResult>& runs) {
  std::vector<std::string> out;
  for (const RunResult& r : runs)
    for (const PointResult& p : r.points)
      if (p.verdict() == Verdict::kOutOfBand)
        out.push_back(fmt::format("{}/{}: {} error {:+.1f}{} outside its band ±{:g} and no expected_miss", r.run.name,
                                  p.point.id, p.loo_error_pct ? "LOO" : "held-out", p.scored_error(),
                                  p.scoring == Scoring::kOverheadPp ? " pp of overhead" : " %", p.band));
  return out;
}

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::kWithinBand: return "within-band";
    case PointStatus::kOk: return "ok";
    case PointStatus::kWorseThanRecorded: return "worse-than-recorded";
  }
  return "?";
}

PointStatus field_status(const FieldPoint& p, double error, double band) {
  if (!p.recorded_error_pct || std::abs(error) > std::abs(*p.recorded_error_pct) + kRecordSlackPct)
    return PointStatus::kWorseThanRecorded;
  return std::abs(error) <= band ? PointStatus::kWithinBand : PointStatus::kOk;
}

std::string term_kinds_summary(const std::vector<TermSource>& terms) {
  std::map<std::string, int> count;
  std::string assumed;
  for (const TermSource& t : terms) {
    ++count[t.kind.empty() ? "unlabelled" : t.kind];
    if (t.kind == "assumed") assumed += (assumed.empty() ? "" : ", ") + t.term;
  }
  std::string o;
  for (const char* k : {"measured", "calibrated", "fitted", "modelled", "assumed", "unlabelled"})
    if (count.count(k)) o += fmt::format("{}{} {}", o.empty() ? "" : ", ", count[k], k);
  if (o.empty()) o = "no term labelled (built-in defaults)";
  if (!assumed.empty()) o += "; assumed: " + assumed;
  return o;
}

std::vector<std::string> check_failures(const std::vector<RunResult>& runs) {
  std::vector<std::string> out;
  for (const RunResult& r : runs)
    for (const PointResult& p : r.points) {
      if (p.status != PointStatus::kWorseThanRecorded) continue;
      out.push_back(p.point.recorded_error_pct
                        ? fmt::format("{}/{}: error {:+.1f} % (recorded {:+.1f} %, allowed |error| <= {:.1f})",
                                      r.run.name, p.point.id, p.scored_error(), *p.point.recorded_error_pct,
                                      std::abs(*p.point.recorded_error_pct) + kRecordSlackPct)
                        : fmt::format("{}/{}: error {:+.1f} % (no recorded error: run `hisparse fidelity --record` "
                                      "once the figure is accepted)",
                                      r.run.name, p.point.id, p.scored_error()));
    }
  return out;
}

std::string PointResult::status_text() const {
  return fitted() ? fmt::format("{} (fitted)", to_string(status)) : std::string(to_string(status));
}

void mark_fitted_points(RunResult& run) {
  for (PointResult& p : run.points)
    for (const FittedPoint& f : run.fitted_points)
      if (f.point == run.run.name + "/" + p.point.id) p.fitted_by.push_back(f.term);
}

BandCounts count_within_band_by_fit(const std::vector<RunResult>& runs) {
  BandCounts c;
  for (const RunResult& r : runs)
    for (const PointResult& p : r.points) {
      const bool within = std::abs(p.scored_error()) <= p.band;
      (p.point.role_fitted ? c.fitted : c.held_out) += 1;
      (p.point.role_fitted ? c.fitted_within : c.held_out_within) += within ? 1 : 0;
      c.expected_miss += p.verdict() == Verdict::kExpectedMiss ? 1 : 0;
      c.out_of_band += p.verdict() == Verdict::kOutOfBand ? 1 : 0;
    }
  return c;
}

std::pair<int, int> count_within_band(const std::vector<RunResult>& runs) {
  int within = 0, total = 0;
  for (const RunResult& r : runs)
    for (const PointResult& p : r.points) {
      ++total;
      if (std::abs(p.scored_error()) <= p.band) ++within;
    }
  return {within, total};
}

}  // namespace hisparse::sim
