// @brief The step breakdown `hisparse fidelity` prints beside each DP-attention run (sim/fidelity/step_breakdown.h):
// the busiest DP rank sets the step (worked by hand at 9 requests on 8 ranks), the terms add up to the step and the
// MoE terms to the phase the step model charges, the DeepEP mode follows the deployment (auto: low-latency in decode,
// SGLang's rule), each term is labelled by where its time comes from, and only DP-attention runs get a breakdown.
#include <doctest/doctest.h>

#include <string>

#include "sim/api/fidelity_request.h"
#include "sim/api/scenario_setup.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/fidelity/field_evaluation.h"
#include "sim/fidelity/step_breakdown.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

ScenarioSetup setup_of(const std::string& deployment) {
  ScenarioChoice c;
  c.scenario = deployment;
  return load_scenario_setup(c, "test");
}

const BreakdownTerm& term(const StepBreakdown& b, const std::string& prefix) {
  for (const BreakdownTerm& t : b.terms)
    if (t.name.rfind(prefix, 0) == 0) return t;
  FAIL("no term " << prefix);
  return b.terms.front();
}

double sum_ms(const StepBreakdown& b) {
  double s = 0;
  for (const BreakdownTerm& t : b.terms) s += t.ms;
  return s;
}

constexpr int64_t kContext = 32768;

}  // namespace

TEST_CASE("the busiest DP rank sets the step: 9 requests on 8 ranks price a rank of 2") {
  const ScenarioSetup s = setup_of("dsv32-8xh200-1tb");
  REQUIRE(s.cost.overlap == OverlapMode::kNone);
  const StepTimeModel model(s.scenario, s.cost, false, nullptr);
  REQUIRE(model.layout().ranks == 8);
  // By hand: ceil(9 / 8) = 2 requests on the busiest rank; the other seven hold one each. DP attention pads every
  // rank's graph to the largest rank batch, so the rank side of the step is that of a rank holding 2.
  const StepBreakdown b9 = step_breakdown(model, s.cost, KvMode::kFull, 9, kContext);
  CHECK(b9.ranks == 8);
  CHECK(b9.busiest == 2);
  const StepEstimate rank2 = model.step(2, kContext);  // every rank holding 2 (16 requests)
  CHECK(term(b9, "attention").ms == doctest::Approx(rank2.cost.attention * 1e-6).epsilon(1e-12));
  CHECK(term(b9, "indexer").ms == doctest::Approx(rank2.cost.indexer * 1e-6).epsilon(1e-12));
  // The MoE's per-GPU terms are the busiest GPU's (2 tokens): DeepEP's dispatch/combine equals the 16-request step's;
  // the instance's 9 tokens touch no more experts than 16 do.
  const StepBreakdown b16 = step_breakdown(model, s.cost, KvMode::kFull, 16, kContext);
  CHECK(b16.busiest == 2);
  CHECK(term(b9, "dispatch_combine").ms == term(b16, "dispatch_combine").ms);
  CHECK(term(b9, "routed_experts").ms <= term(b16, "routed_experts").ms);
  // Expect the step to be fidelity's tpot_ms at 9 (one model, no MTP), and the terms to add up to it.
  CHECK(b9.step_ms == doctest::Approx(model_tpot_ms(model, 9, kContext)).epsilon(1e-12));
  CHECK(sum_ms(b9) == doctest::Approx(b9.step_ms).epsilon(1e-9));
  // One request more than 16 puts 3 on a rank: a longer step than 16 requests give.
  const StepBreakdown b17 = step_breakdown(model, s.cost, KvMode::kFull, 17, kContext);
  CHECK(b17.busiest == 3);
  CHECK(b17.step_ms > b16.step_ms);
}

TEST_CASE("HiSparse terms (swap-in, copies) add up to the step, and the MoE terms to the phase the model charges") {
  const ScenarioSetup s = setup_of("dsv32-8xh200-1tb");
  const StepTimeModel model(s.scenario, s.cost, true, [](int64_t) { return 0.05; });
  const StepBreakdown b = step_breakdown(model, s.cost, KvMode::kHiSparse, 64, kContext);
  CHECK(sum_ms(b) == doctest::Approx(b.step_ms).epsilon(1e-9));
  CHECK(term(b, "h2d").ms > 0);
  CHECK(b.note.empty());  // overlap none: the MoE phase is its terms' sum
  // Expect DecodeCostModel's terms to sum to moe_phase (compute and communication apart), the dense layers' all-reduce
  // among them (DeepSeek-V3.2 has 3 dense layers).
  const DecodeCostModel& dcm = model.estimator().cost();
  const DecodeCostModel::MoeTime phase = dcm.moe_phase(64, 8);
  SimTime compute = 0, comm = 0;
  bool dense_all_reduce = false;
  for (const MoeTerm& t : dcm.moe_terms(64, 8)) {
    (t.communication ? comm : compute) += t.ns;
    dense_all_reduce = dense_all_reduce || t.name == "dense_all_reduce";
    CHECK_FALSE(t.source.empty());
  }
  CHECK(compute == phase.compute);
  CHECK(comm == phase.all_to_all);
  CHECK(dense_all_reduce);
}

TEST_CASE("the DeepEP mode is SGLang's: auto runs low-latency in a decode step, normal when the deployment says so") {
  ScenarioSetup s = setup_of("dsv32-8xh200-1tb");
  REQUIRE(s.scenario.deployment.deepep_mode == "auto");
  const StepTimeModel auto_model(s.scenario, s.cost, false, nullptr);
  const StepBreakdown a = step_breakdown(auto_model, s.cost, KvMode::kFull, 16, kContext);
  CHECK(a.deepep.rfind("low_latency (deepep_mode auto", 0) == 0);
  CHECK(term(a, "dispatch_combine").name == "dispatch_combine (DeepEP low_latency)");
  s.scenario.deployment.deepep_mode = "normal";
  const StepTimeModel normal_model(s.scenario, s.cost, false, nullptr);
  CHECK(step_breakdown(normal_model, s.cost, KvMode::kFull, 16, kContext).deepep.rfind("normal (", 0) == 0);
  // Attention TP (no DP attention) dispatches nothing: no DeepEP mode, an all-reduce instead.
  const ScenarioSetup tp = setup_of("glm51-8xh200-tp8-r11");
  const StepTimeModel tp_model(tp.scenario, tp.cost, false, nullptr);
  const StepBreakdown t = step_breakdown(tp_model, tp.cost, KvMode::kFull, 4, kContext);
  CHECK(t.deepep.empty());
  CHECK(term(t, "moe_all_reduce").ms > 0);
}

TEST_CASE("each term says where its time comes from: an H100 op table where measured, modelled elsewhere") {
  // H100 has op tables (routed experts at EP 16 among them); the RTX PRO 6000 has none.
  const ScenarioSetup h100 = setup_of("dsv32-2x8xh100-dp16");
  REQUIRE(h100.cost.op_tables != nullptr);
  const StepTimeModel m100(h100.scenario, h100.cost, false, nullptr);
  const StepBreakdown b100 = step_breakdown(m100, h100.cost, KvMode::kFull, 256, kContext);
  const std::string routed = term(b100, "routed_experts").source;
  CHECK(routed.rfind("measured (", 0) == 0);
  CHECK(routed.find(".csv op ") != std::string::npos);
  CHECK(b100.tables.find("terms from ") != std::string::npos);
  const ScenarioSetup h200 = setup_of("glm51-8xrtxpro6000-tp8");
  const StepTimeModel m200(h200.scenario, h200.cost, false, nullptr);
  const StepBreakdown b200 = step_breakdown(m200, h200.cost, KvMode::kFull, 256, kContext);
  CHECK(term(b200, "routed_experts").source.rfind("modelled (", 0) == 0);
  CHECK(b200.tables == "no op table read for rtx-pro-6000: every term modelled");
  // The fixed terms carry their cost-file kind.
  CHECK(term(b200, "sampling").source.find("(cost term sampling)") != std::string::npos);
}

TEST_CASE("fidelity prints a breakdown beside each DP-attention run's step points, none for a TP run") {
  FidelityRequest req;
  req.field = {std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/fidelity/data"};
  req.simulate = false;
  req.fits = "none";
  const FidelityReport rep = run_fidelity(req);
  REQUIRE(rep.runs.size() == 2);
  for (const RunResult& r : rep.runs) {
    CAPTURE(r.run.name);
    const bool dp = r.run.deployment == "dsv32-8xh200-1tb";  // DP8; the GLM fixture's node is TP8
    CHECK(r.step_breakdowns().empty() != dp);
    for (const StepBreakdown& b : r.step_breakdowns()) {
      // Expect each breakdown at a step point's load, and in the console text and the JSON.
      bool matches = false;
      for (const PointResult& p : r.points)
        matches = matches || (p.point.metric == FieldMetric::kTpotMs && p.point.concurrency == b.concurrency);
      CHECK(matches);
      CHECK(fidelity_console_text(rep).find(r.run.name + " " + breakdown_where(b) + ": step") != std::string::npos);
      CHECK(fidelity_json(rep).find("\"busiest_rank\": " + std::to_string(b.busiest)) != std::string::npos);
    }
  }
}
