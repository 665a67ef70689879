// @brief The advice's robustness check: where two miss sources disagree the verdict names the source that decides
// it, each rule picks what it says, agreeing sources give "robust", and the cases are every shipped surface but the
// advice's own plus each assumed time-valued term at both ends of its ±50 % range.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/advise/advisor.h"
#include "sim/advise/robustness.h"
#include "sim/advise/robustness_report.h"
#include "sim/api/scenario_setup.h"
#include "sim/miss/miss_surface.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

// Two constant miss sources: the advice's own (no misses past the buffer) and a pessimist (every selection misses).
AdviseOptions two_sources(DecisionRule rule) {
  AdviseOptions o;
  o.own_source = "optimist";
  o.rule = rule;
  UncertaintyCase c;
  c.name = "pessimist";
  c.kind = "miss source";
  c.label = "given (every selection misses)";
  c.misses = std::make_shared<const MissCurves>(MissCurves::constant(1.0, "every selection misses"));
  c.cost = o.cost;
  o.uncertainty.push_back(c);
  return o;
}

}  // namespace

TEST_CASE("robustness: two miss sources that disagree — the verdict names the source that decides") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");  // advise() sets max_running_requests
  const MissCurves optimist = MissCurves::constant(0.0, "no misses");
  const ContextMix mix = ContextMix::single(32768);

  // default-source: the optimist's best is recommended; the pessimist prefers another setting, so it decides.
  const Advice d = advise(s, mix, optimist, two_sources(DecisionRule::kDefaultSource));
  const Robustness& rd = d.robustness;
  REQUIRE(rd.cases.size() == 2);
  REQUIRE(rd.cases[0].best >= 0);
  REQUIRE(rd.cases[1].best >= 0);
  CHECK(rd.cases[0].best != rd.cases[1].best);  // the sources disagree
  CHECK(d.best == rd.cases[0].best);
  CHECK_FALSE(rd.robust);
  CHECK(rd.deciding == 1);
  CHECK(rd.verdict.rfind("decided by pessimist (miss source): under it ", 0) == 0);
  CHECK(rd.regret[0] == 0);
  CHECK(rd.regret[1] > 0);
  // The range spans the two sources' goodputs of the recommendation.
  CHECK(rd.low == doctest::Approx(rd.cases[1].goodput[static_cast<size_t>(d.best)]));
  CHECK(rd.high == doctest::Approx(rd.cases[0].goodput[static_cast<size_t>(d.best)]));
  // The table shows the recommendation first and the pessimist's best beside it, in text and JSON.
  CHECK(rd.shortlist == std::vector<int>{rd.cases[0].best, rd.cases[1].best});
  const std::string text = robustness_text(d);
  CHECK(text.find("robustness: decided by pessimist") == 0);
  CHECK(text.find("optimist") != std::string::npos);
  hisparse::JsonWriter j;
  robustness_json(j, d);
  CHECK(j.str().find("\"deciding_case\": 1") != std::string::npos);

  // worst-case: every setting is worst under the pessimist, so its best is recommended and the optimist decides.
  const Advice w = advise(s, mix, optimist, two_sources(DecisionRule::kWorstCase));
  CHECK(w.best == w.robustness.cases[1].best);
  CHECK(w.robustness.deciding == 0);
  CHECK(w.robustness.verdict.rfind("decided by optimist (miss source)", 0) == 0);
  CHECK(w.robustness.verdict.find("rule worst-case") != std::string::npos);
  // Its lowest goodput is the highest lowest goodput of all settings.
  for (size_t i = 0; i < w.candidates.size(); ++i)
    CHECK(std::min(w.robustness.cases[0].goodput[i], w.robustness.cases[1].goodput[i]) <=
          w.robustness.low * (1 + 1e-9));
}

TEST_CASE("robustness: sources that agree give the robust verdict and change nothing") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");  // advise() sets max_running_requests
  const MissCurves own = default_miss_curves(s);
  AdviseOptions o;
  UncertaintyCase same;
  same.name = "the same surface again";
  same.kind = "miss source";
  same.misses = std::make_shared<const MissCurves>(default_miss_curves(s));
  same.cost = o.cost;
  o.uncertainty.push_back(same);
  const Advice a = advise(s, ContextMix::single(65536), own, o);
  const Advice plain = advise(s, ContextMix::single(65536), own, AdviseOptions{});
  CHECK(a.best == plain.best);
  CHECK(a.robustness.robust);
  CHECK(a.robustness.deciding == -1);
  CHECK(a.robustness.verdict.rfind("robust: ", 0) == 0);
  CHECK(a.robustness.low == doctest::Approx(a.robustness.high));
}

TEST_CASE("robustness: the cases — every shipped surface but the advice's own, each assumed time term at ×0.5 and ×1.5") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");  // advise() sets max_running_requests
  ScenarioChoice choice;
  choice.scenario = "dsv32-8xh200-1tb";
  const ScenarioSetup setup = load_scenario_setup(choice, "test");
  const std::vector<UncertaintyCase> cases =
      uncertainty_cases(s, setup.cost, default_miss_surface(s.deployment.hisparse.top_k), "sglang-lru", {});
  std::vector<std::string> names;
  for (const auto& c : cases) names.push_back(c.name);
  CAPTURE(names.size());
  // The default surface is the advice's own: not a case. Another shipped surface is.
  CHECK(std::find(names.begin(), names.end(), default_miss_surface(s.deployment.hisparse.top_k)) == names.end());
  CHECK(std::find(names.begin(), names.end(), "synthetic-dsv32") != names.end());
  CHECK(std::find(names.begin(), names.end(), kDefaultMissSurface) != names.end());  // smollm2-real, K 256
  for (const TermSource& t : setup.cost.sources) {
    SimTime CostParams::*m = cost_time_term(t.term);
    const bool live = t.kind == "assumed" && m && setup.cost.*m != 0;
    CAPTURE(t.term);
    CHECK((std::find(names.begin(), names.end(), t.term + " ×0.5") != names.end()) == live);
    CHECK((std::find(names.begin(), names.end(), t.term + " ×1.5") != names.end()) == live);
    if (!live) continue;
    for (const auto& c : cases)
      if (c.name == t.term + " ×1.5") CHECK(c.cost.*m == static_cast<SimTime>(static_cast<double>(setup.cost.*m) * 1.5));
  }
}

TEST_CASE("robustness: an unknown decision rule is refused, naming it and the choices") {
  CHECK(parse_decision_rule("expected", "x") == DecisionRule::kExpected);
  CHECK_THROWS_WITH_AS(parse_decision_rule("optimistic", "advise: --decision-rule"),
                       doctest::Contains("advise: --decision-rule: decision rule 'optimistic' is unknown (expected "
                                         "worst-case, expected, min-regret or default-source)"),
                       hisparse::Error);
}
