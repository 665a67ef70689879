// @brief The typed requests of sim/api give what the sim/ functions give when called by hand on the same
// set-up: run_plan = compute_capacity_plan, run_advise = advise per mix, simulate = run_serving; a request's own
// rules (the advisor chooses H, ratio and the cap; a sweep point is one setting) hold.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/api/advise_request.h"
#include "sim/api/plan_request.h"
#include "sim/calibration/op_tables_choice.h"
#include "sim/api/simulate_request.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/serving/serving_report.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

constexpr const char* kDsv32 = "dsv32-8xh200-1tb";

/// The scenario and cost model as the commands built them before the loader: by hand, in the same order.
Scenario by_hand(CostParams* cost, int32_t H) {
  Scenario s = load_scenario(kDsv32);
  s.deployment.hisparse.device_buffer_size = H;
  load_cost_terms("auto", s, cost);
  apply_attention_table("auto", s, cost);
  apply_calibrations("auto", "auto", &s, cost);
  apply_op_tables("auto", s, cost);  // the loader's last step: the engine's kernels timed on this GPU
  return s;
}

}  // namespace

TEST_CASE("PlanRequest: the plan of the request is the plan computed by hand on the overridden scenario") {
  PlanRequest r;
  r.setup.scenario = kDsv32;
  r.setup.overrides.device_buffer_size = 6144;
  r.seq_lens = {16384, 131072};
  r.sweep_buffer_sizes = {4096, 2048};
  r.sweep_ratios = {5, 2};
  r.command_line = "test";
  const PlanOutcome got = run_plan(r);
  PlanOptions o;
  const Scenario s = by_hand(&o.cost, 6144);
  o.seq_lens = {16384, 131072};
  o.sweep_buffer_sizes = {2048, 4096};  // sorted, as the request sorts them
  o.sweep_ratios = {2, 5};
  const CapacityPlan expected = compute_capacity_plan(s, o, default_miss_curves(s));
  PlanRunInfo info = got.info;
  MESSAGE("plan.json of both is the same text (the run section is the request's, so it is shared)");
  REQUIRE(!got.plan.rows.empty());
  CHECK(got.json() == plan_to_json(expected, info));
  CHECK(got.scenario.deployment.hisparse.device_buffer_size == 6144);
}

TEST_CASE("PlanRequest: a single-setting request (a sweep point) sweeps only the deployment's own H and ratio") {
  PlanRequest r;
  r.setup.scenario = kDsv32;
  r.setup.overrides.host_to_device_ratio = 3;
  r.seq_lens = {32768};
  r.single_setting = true;
  const PlanOutcome got = run_plan(r);
  MESSAGE("one buffer size and one ratio: the deployment's H and the overridden ratio 3");
  REQUIRE(got.plan.options.sweep_buffer_sizes.size() == 1);
  CHECK(got.plan.options.sweep_buffer_sizes.front() == got.scenario.deployment.hisparse.device_buffer_size);
  REQUIRE(got.plan.options.sweep_ratios.size() == 1);
  CHECK(got.plan.options.sweep_ratios.front() == 3);
  MESSAGE("errors name the request's command, so a sweep's row says which point failed");
  r.command = "sweep point 7";
  r.setup.overrides.device_buffer_size = 1000;
  try {
    run_plan(r);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).rfind("sweep point 7: device_buffer_size (1000)", 0) == 0);
  }
}

TEST_CASE("AdviseRequest: the advice of the request is the advisor's on the loaded set-up; H, ratio and cap are its own") {
  AdviseRequest r;
  r.setup.scenario = kDsv32;
  r.setup.overrides.tpot_slo_ms = 60;
  r.seq_lens = {32768};
  r.buffer_sizes = {4096, 8192};
  r.ratios = {2, 4};
  int progress_lines = 0;
  const AdviseOutcome got = run_advise(r, [&](const std::string&) { ++progress_lines; });
  MESSAGE("one mix, one progress line, one advice, on the overridden SLO");
  CHECK(progress_lines == 1);
  REQUIRE(got.advices.size() == 1);
  CHECK(got.setup.scenario.deployment.tpot_slo_ms == 60);
  AdviseOptions o;
  Scenario s = by_hand(&o.cost, load_scenario(kDsv32).deployment.hisparse.device_buffer_size);
  s.deployment.tpot_slo_ms = 60;
  o.buffer_sizes = {4096, 8192};
  o.ratios = {2, 4};
  const Advice expected = advise(s, ContextMix::single(32768), default_miss_curves(s), o);
  REQUIRE(got.advices.front().recommended());
  REQUIRE(expected.recommended());
  CHECK(got.advices.front().recommended()->name() == expected.recommended()->name());
  CHECK(got.advices.front().recommended()->goodput == expected.recommended()->goodput);
  MESSAGE("an override of what the advice chooses is refused, saying to give candidates instead");
  r.setup.overrides.max_running_requests = 64;
  try {
    run_advise(r);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("are what advise chooses") != std::string::npos);
  }
}

TEST_CASE("SimulateRequest: one run of the loaded set-up is run_serving on the same scenario, cost and misses") {
  SimulateRequest r;
  r.setup.scenario = kDsv32;
  r.setup.overrides.tpot_slo_ms = 80;
  r.workload = "synthetic_poisson";
  r.duration_s = 2;
  r.misses.fraction = 0.1;
  const SimulationSetup setup = load_simulation(r);
  MESSAGE("PD without a prefill section: the set-up says TTFT is not modelled");
  REQUIRE(setup.notes.size() == 1);
  CHECK(setup.notes.front().find("TTFT is not modelled") != std::string::npos);
  ClientSpec clients;
  clients.concurrency = 2;
  clients.requests = 4;
  const ServingResult got = simulate(setup, KvMode::kHiSparse, OverlapMode::kNone, clients);
  ServingOptions o;
  o.mode = KvMode::kHiSparse;
  o.cost = setup.cost;
  o.cost.overlap = OverlapMode::kNone;
  o.miss_model = setup.miss.get();
  o.clients = clients;
  const ServingResult expected = run_serving(setup.scenario, setup.workload, o);
  MESSAGE("the same summary, byte for byte, and the overridden SLO in it");
  REQUIRE(got.finished == 4);
  CHECK(summary_json(got, setup.scenario) == summary_json(expected, setup.scenario));
  CHECK(summary_json(got, setup.scenario).find("\"tpot_slo_ms\": 80") != std::string::npos);
  MESSAGE("a bad miss model or fraction is named");
  r.miss_model = "psychic";
  try {
    load_simulation(r);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("--miss-model 'psychic'") != std::string::npos);
  }
}
