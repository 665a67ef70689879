// @brief Capacity plan with --trace: the one-pass replay fit equals the serving simulator's own fit at each H, and an
// H the trace never exceeds falls back to the statistical fraction (and says so).
#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.h"
#include "sim/miss_model.h"
#include "sim/plan/miss_curve.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("plan miss curves from a replayed trace") {
  traces::GeneratorOptions g;
  g.requests = 2;
  g.steps = 40;
  g.layers = 3;
  g.top_k = 256;
  g.prompt_len = 1500;  // n runs 1500..1539
  g.initial_state = InitialState::kEmpty;
  g.seed = 11;
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_plan_trace.hst";
  {
    auto src = traces::make_generated_trace(g);
    auto w = traces::make_native_writer(path, src->meta());
    traces::copy_trace(*src, *w);
  }
  StatisticalMissParams fallback;
  fallback.by_ratio = {{1.0, 0.25}};
  const MissCurves c = MissCurves::from_trace(path, "sglang-lru", {256, 512, 2048}, 1152, 1, fallback);
  CHECK(c.from_trace());
  for (int32_t H : {256, 512}) {
    CAPTURE(H);
    // The simulator's fit (sim/trace_miss_model.cpp) bins the same steps the same way: same points.
    const StatisticalMissParams ref = fit_statistical_miss_model(path, "sglang-lru", H, 3, 1152);
    const MissCurve& mc = c.curve(H);
    REQUIRE(mc.by_ratio.size() == ref.by_ratio.size());
    for (size_t i = 0; i < ref.by_ratio.size(); ++i) {
      CHECK(mc.by_ratio[i].first == doctest::Approx(ref.by_ratio[i].first));
      CHECK(mc.by_ratio[i].second == doctest::Approx(ref.by_ratio[i].second));
    }
    CHECK(mc.slow_step_layers > 0);
    const double f = c.fraction(H, 1520);
    CHECK(f >= 0);
    CHECK(f <= 1);
  }
  // 2048 > every n of the trace: nothing measured, the fallback 0.25 applies and is named.
  REQUIRE(c.unmeasured().size() == 1);
  CHECK(c.unmeasured()[0] == 2048);
  CHECK(c.fraction(2048, 100000) == 0.25);
  CHECK(c.description().find("never exceeds H = 2048") != std::string::npos);
  // An H below the trace's top_k is an error naming it.
  CHECK_THROWS_AS(MissCurves::from_trace(path, "sglang-lru", {128}, 1152, 1, fallback), hisparse::Error);
  std::filesystem::remove(path);
}
