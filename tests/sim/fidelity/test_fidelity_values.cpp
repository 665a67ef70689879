// @brief Each metric `hisparse fidelity` reports on the fixtures is the number plan's own objects give for the same
// inputs, computed here through the public API (load_scenario_setup, load_miss_curves, StepTimeModel, run_plan,
// load_simulation + simulate), not hard-coded; and the error is signed against the published figure or range.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "core/io/read_file.h"
#include "sim/api/fidelity_request.h"
#include "sim/api/plan_request.h"
#include "sim/api/scenario_setup.h"
#include "sim/api/simulate_request.h"
#include "sim/serving/serving_report.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/fidelity/data";

const PointResult& point(const RunResult& r, const std::string& id) {
  for (const PointResult& p : r.points)
    if (p.point.id == id) return p;
  FAIL("no point " << id);
  return r.points.front();
}

/// The fixtures' one override (the GLM run's kv_dtype fp8), as plan's --kv-dtype would give it.
ScenarioChoice choice_of(const FieldRun& run) {
  ScenarioChoice c;
  c.scenario = run.deployment;
  if (run.overrides && run.overrides["kv_dtype"]) c.overrides.kv_dtype = run.overrides["kv_dtype"].Scalar();
  REQUIRE((!run.overrides || run.overrides.size() <= 1));
  return c;
}

/// What `plan --seq-lens n` on the run's deployment gives for `mode`: (max_concurrency, with --limits memory or not).
int64_t planned(const FieldRun& run, int64_t n, KvMode mode, bool memory_only) {
  PlanRequest q;
  q.setup = choice_of(run);
  q.seq_lens = {n};
  q.memory_only = memory_only;
  for (const PlanRow& r : run_plan(q).plan.rows)
    if (r.mode == mode) return r.max_concurrency;
  FAIL("no row");
  return -1;
}

}  // namespace

TEST_CASE("fidelity's plan values are StepTimeModel's and the capacity plan's on the same inputs") {
  FidelityRequest req;
  req.field = {kData};
  req.simulate = false;
  const FidelityReport rep = run_fidelity(req);
  REQUIRE(rep.runs.size() == 2);
  for (const RunResult& r : rep.runs) {
    const ScenarioSetup setup = load_scenario_setup(choice_of(r.run), "test");
    const Scenario& s = setup.scenario;
    const int32_t H = s.deployment.hisparse.device_buffer_size;
    const LoadedMisses misses = load_miss_curves({}, s, {H}, "test");
    const StepTimeModel full(s, setup.cost, false, nullptr);
    const StepTimeModel hs(s, setup.cost, true, [&misses, H](int64_t n) { return misses.curves->fraction(H, n); });
    const int ranks = rank_layout(s).ranks;
    // The busiest rank holds ceil(c / ranks), the instance c in all (its MoE phase carries c tokens).
    auto step_ms = [&](KvMode m, int64_t c, int64_t n) {
      const int64_t per_rank = (c + ranks - 1) / ranks;
      return static_cast<double>(
                 (m == KvMode::kFull ? full : hs).step(per_rank, ContextMix::single(n), c).step_ns) * 1e-6;
    };
    for (const PointResult& p : r.points) {
      const FieldPoint& f = p.point;
      CAPTURE(f.id);
      switch (f.metric) {
        case FieldMetric::kTpotMs:
          // Expect the step time of ceil(c / ranks) requests per rank at the point's context.
          CHECK(p.plan == doctest::Approx(step_ms(f.mode, f.concurrency, f.context)).epsilon(1e-12));
          break;
        case FieldMetric::kTokensPerS:
          CHECK(p.plan == doctest::Approx(f.concurrency / (step_ms(f.mode, f.concurrency, f.context) * 1e-3)).epsilon(1e-12));
          break;
        case FieldMetric::kGain: {
          // Expect HiSparse tokens/s over full KV's, each mode at min(c, its memory-only max_concurrency).
          const int64_t fc = std::min<int64_t>(f.concurrency, planned(r.run, f.context, KvMode::kFull, true));
          const int64_t hc = std::min<int64_t>(f.concurrency, planned(r.run, f.context, KvMode::kHiSparse, true));
          const double expect = (hc / step_ms(KvMode::kHiSparse, hc, f.context)) /
                                (fc / step_ms(KvMode::kFull, fc, f.context));
          CHECK(p.plan == doctest::Approx(expect).epsilon(1e-12));
          break;
        }
        case FieldMetric::kMaxConcurrency:
          CHECK(p.plan == static_cast<double>(planned(r.run, f.context, f.mode, false)));
          break;
        case FieldMetric::kPoolTokens:  // not in these fixtures (tests/sim/fidelity/test_field_pending.cpp has one)
          FAIL("unexpected pool_tokens point " << f.id);
          break;
      }
      CHECK_FALSE(p.simulate.has_value());
      // Expect the signed error against the published figure, 0 inside a published range; a gain at which both modes
      // run the offered batch in overhead percentage points, (1 - tool) - (1 - published).
      if (p.scoring == Scoring::kOverheadPp) {
        CHECK(p.band == kOverheadBandPp);
        CHECK(p.error_pct == doctest::Approx(((1 - p.plan) - (1 - *f.published)) * 100));
      } else if (f.published) CHECK(p.error_pct == doctest::Approx((p.plan - *f.published) / *f.published * 100));
      else if (p.plan >= f.published_range->first && p.plan <= f.published_range->second) CHECK(p.error_pct == 0);
    }
  }
  // The shipped deployment's 128K HiSparse capacity is the plan's (72, bound by the logical pool: `plan --scenario
  // dsv32-8xh200-1tb --seq-lens 128K`, CTest plan_dsv32-8xh200-1tb).
  CHECK(point(rep.runs[0], "cap_hs_128k").plan == 72);
}

TEST_CASE("at a multiple of the ranks the step is plan's own; below, the idle ranks add no MoE tokens") {
  ScenarioChoice c;
  c.scenario = "dsv32-8xh200-1tb";
  // The modelled MoE terms, continuous in the tokens (an op table floors a kernel at its smallest measured batch, so
  // one token and eight would cost the same there).
  c.op_tables = "none";
  const ScenarioSetup setup = load_scenario_setup(c, "test");
  const StepTimeModel full(setup.scenario, setup.cost, false, nullptr);
  REQUIRE(full.layout().ranks == 8);
  // 16 requests on 8 ranks: exactly plan's step of 2 per rank (the number its curves print).
  CHECK(model_tpot_ms(full, 16, 33792) == static_cast<double>(full.step(2, 33792).step_ns) * 1e-6);
  CHECK(model_tokens_per_s(full, 16, 33792) == doctest::Approx(full.step(2, 33792).tokens_per_s).epsilon(1e-12));
  // One request: one rank busy, the MoE phase carries one token instead of eight, so the step is shorter.
  CHECK(model_tpot_ms(full, 1, 33792) < static_cast<double>(full.step(1, 33792).step_ns) * 1e-6);
  // 9 requests: the busiest rank holds 2, the instance 9 (between 8 × 1 and 8 × 2 tokens).
  CHECK(model_tpot_ms(full, 9, 33792) <= model_tpot_ms(full, 16, 33792));
  CHECK(model_tpot_ms(full, 9, 33792) > model_tpot_ms(full, 8, 33792));
}

TEST_CASE("a closed-loop run's simulate value is `simulate --concurrency` with fixed-length requests") {
  FidelityRequest req;
  req.field = {kData + "/fixture-glm51-closed-loop.yaml"};
  int progress_lines = 0;
  const FidelityReport rep = run_fidelity(req, [&progress_lines](const std::string&) { ++progress_lines; });
  const RunResult& r = rep.runs.at(0);
  const PointResult& tpot = point(r, "tpot_c1");
  REQUIRE(tpot.simulate.has_value());
  SimulateRequest q;
  q.setup = choice_of(r.run);
  q.fixed_input_tokens = r.run.input_tokens;
  q.fixed_output_tokens = r.run.output_tokens;
  const SimulationSetup setup = load_simulation(q, "test");
  ClientSpec c;
  c.concurrency = 1;
  c.requests = kFidelityWaves;
  const ServingSummary s = summarize(simulate(setup, KvMode::kHiSparse, setup.cost.overlap, c), setup.scenario);
  // Expect the TPOT p50 of that run, and plan-vs-simulate as (plan − simulate) / simulate.
  CHECK(*tpot.simulate == s.tpot_ms.p50);
  CHECK(*tpot.plan_vs_sim_pct == doctest::Approx((tpot.plan - s.tpot_ms.p50) / s.tpot_ms.p50 * 100));
  // Expect one progress line per distinct serving run: hisparse c1, full c4, hisparse c4.
  CHECK(progress_lines == 3);
  // The capacity point has no simulate value: simulate answers step metrics only.
  CHECK_FALSE(point(r, "cap_full").simulate.has_value());
}

TEST_CASE("an override value out of range is an error naming the field file, the key and its line") {
  const auto dir = std::filesystem::temp_directory_path() / ("hisparse_fid_ovr_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "fixture-glm51-closed-loop.yaml").string();
  std::string text = read_file(kData + "/fixture-glm51-closed-loop.yaml");
  text.replace(text.find("kv_dtype: fp8"), 13, "kv_dtype: fp4");
  std::ofstream(path) << text;
  FidelityRequest req;
  req.field = {path};
  req.simulate = false;
  // The settings table's words, as the flag's (--kv-dtype fp4) and the Python keyword's (kv_dtype="fp4").
  const std::string expected = path + " (line 11): overrides.kv_dtype fp4: expected bf16, fp8 or nvfp4";
  CHECK_THROWS_WITH_AS(run_fidelity(req), expected.c_str(), Error);
  std::filesystem::remove_all(dir);
}
