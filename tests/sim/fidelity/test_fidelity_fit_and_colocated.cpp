// @brief What `hisparse fidelity` adds over the plan's step: a cost term of kind fitted names the field points it was
// fitted to (the loader insists), those points are reported apart from the held-out ones, and a colocated run's
// tokens/s carries each request's prefill pass.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "sim/api/scenario_setup.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/fidelity/field_evaluation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

PointResult point_of(const std::string& id, double error_pct, double tolerance = 15) {
  PointResult p;
  p.point.id = id;
  p.point.tolerance_pct = tolerance;
  p.band = tolerance;
  p.error_pct = error_pct;
  return p;
}

}  // namespace

TEST_CASE("cost terms: kind fitted needs fitted_to (run/point entries), and only fitted terms may have it") {
  // Expectation: a fitted term's points are recorded with the term's name; a fitted term without them, an entry that
  // is not run/point, and fitted_to on a measured term are errors naming the key.
  const CostParams p = load_cost_params(write_temp(
      "hs_fit_ok.yaml", "sampling: {value: 1ms, kind: fitted, fitted_to: [run-a/p1, run-b/p2], source: x}\n"));
  REQUIRE(p.fitted_points.size() == 2);
  CHECK(p.fitted_points[0].term == "sampling");
  CHECK(p.fitted_points[1].point == "run-b/p2");
  CHECK_THROWS_WITH_AS(load_cost_params(write_temp("hs_fit_none.yaml", "sampling: {value: 1ms, kind: fitted, source: x}\n")),
                       doctest::Contains("fitted_to"), Error);
  CHECK_THROWS_WITH_AS(load_cost_params(write_temp(
                           "hs_fit_bad.yaml", "sampling: {value: 1ms, kind: fitted, fitted_to: [p1], source: x}\n")),
                       doctest::Contains("run/point"), Error);
  CHECK_THROWS_WITH_AS(load_cost_params(write_temp(
                           "hs_fit_kind.yaml", "sampling: {value: 1ms, kind: measured, fitted_to: [a/b], source: x}\n")),
                       doctest::Contains("kind measured"), Error);
}

TEST_CASE("fidelity: the points a term was fitted to are marked; role: fitted ones are counted apart from the held-out") {
  // Expectation: of run r's points p1 (role: fitted, a term fitted to it, +1 %), p2 (held out, +20 %) and p3 (held
  // out, -3 %), p1 reads "(fitted)" and counts as fitted; the held-out count is 1 of 2 within band, 1 out of band.
  RunResult run;
  run.run.name = "r";
  run.points = {point_of("p1", 1), point_of("p2", 20), point_of("p3", -3)};
  run.points[0].point.role_fitted = true;
  run.fitted_points = {{"all_reduce_latency_internode", "r/p1"}, {"other_term", "elsewhere/p2"}};
  mark_fitted_points(run);
  CHECK(run.points[0].fitted());
  CHECK(run.points[0].fitted_by == std::vector<std::string>{"all_reduce_latency_internode"});
  CHECK_FALSE(run.points[1].fitted());  // another run's point of the same id is not this one
  CHECK(run.points[0].status_text().find("(fitted)") != std::string::npos);
  CHECK(run.points[2].status_text().find("(fitted)") == std::string::npos);
  const BandCounts c = count_within_band_by_fit({run});
  CHECK(c.fitted == 1);
  CHECK(c.fitted_within == 1);
  CHECK(c.held_out == 2);
  CHECK(c.held_out_within == 1);
  CHECK(c.out_of_band == 1);
  CHECK(run.points[0].verdict() == Verdict::kFitted);
  CHECK(run.points[1].verdict() == Verdict::kOutOfBand);
}

TEST_CASE("colocated tokens/s: c x O over O steps plus one prefill pass per request per rank") {
  // Expectation: with c requests of O output tokens on an instance of R dp ranks, a wave takes O steps plus
  // ceil(c / R) prefill passes, so tokens/s = c O / (O step + ceil(c / R) P); with no prefill it is the step's c / step.
  ScenarioChoice choice;
  choice.scenario = "glm51-8xh200-colocated";
  const ScenarioSetup setup = load_scenario_setup(choice, "test");
  const StepTimeModel full(setup.scenario, setup.cost, false, nullptr);
  REQUIRE(full.layout().ranks == 8);
  const int64_t n = 36864, O = 8192;
  const double step_s = model_tpot_ms(full, 40, n) * 1e-3;
  const SimTime P = 300'000'000;  // 0.3 s per prefill pass
  const double expect = 40.0 * O / (O * step_s + 5 * 0.3);  // ceil(40 / 8) = 5 passes
  CHECK(colocated_tokens_per_s(full, 40, n, P, O) == doctest::Approx(expect).epsilon(1e-12));
  CHECK(colocated_tokens_per_s(full, 40, n, 0, O) == doctest::Approx(model_tokens_per_s(full, 40, n)).epsilon(1e-12));
  // A longer prefill lowers the throughput; more output tokens per request dilute it.
  CHECK(colocated_tokens_per_s(full, 40, n, 2 * P, O) < colocated_tokens_per_s(full, 40, n, P, O));
  CHECK(colocated_tokens_per_s(full, 40, n, P, 4 * O) > colocated_tokens_per_s(full, 40, n, P, O));
}
