// @brief Capacity plan with --trace: the one-pass replay fit equals the serving simulator's own fit at each H, the
// warm-up steps stay out of it, and an H the trace never exceeds falls back to the given curves (and says so).
#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.h"
#include "sim/miss/miss_model.h"
#include "sim/miss/miss_curve.h"
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
  const MissCurves fallback = MissCurves::constant(0.25, "test fallback");
  const MissCurves c = MissCurves::from_trace(path, "sglang-lru", {256, 512, 2048}, 1152, 1, fallback, 256);
  CHECK(c.from_trace());
  for (int32_t H : {256, 512}) {
    CAPTURE(H);
    // The simulator's fit (sim/miss/trace_miss_model.cpp) bins through the same MissFitter: the same points.
    const StatisticalMissParams ref = fit_statistical_miss_model(path, "sglang-lru", H, 3, 1152);
    const MissCurve& mc = c.curve(H);
    CHECK(mc.by_ratio == ref.by_ratio);
    // Steady samples: every n (1500..1539) exceeds H and every step selects the newest token among K = 256, so
    // each step-layer after the first step and the ceil(H / K) warm-up steps counts: 2 requests × 3 layers ×
    // (40 − 1 − W), W = 1 at H 256 and 2 at H 512 (the former binning also counted the warm-up: 2 × 3 × 39).
    const int64_t W = (H + 255) / 256;
    CHECK(mc.slow_step_layers == 2 * 3 * (40 - 1 - W));
    // n/H: 1500 / 256 = 5.86 .. 1539 / 256 = 6.01 and 1500 / 512 = 2.93 .. 1539 / 512 = 3.01, less the first
    // 1 + W steps (n 1500 + 1 + W on).
    CHECK(mc.ratio_min == doctest::Approx((1500.0 + 1 + W) / H));
    CHECK(mc.ratio_max == doctest::Approx(1539.0 / H));
    const double f = c.fraction(H, 1520);
    CHECK(f >= 0);
    CHECK(f <= 1);
    CHECK_FALSE(c.extrapolated(H, 1520));
    CHECK(c.extrapolated(H, 4000));
  }
  // 2048 > every n of the trace: nothing measured, the fallback 0.25 applies and is named.
  REQUIRE(c.unmeasured().size() == 1);
  CHECK(c.unmeasured()[0] == 2048);
  CHECK(c.fraction(2048, 100000) == 0.25);
  CHECK(c.description().find("never exceeds H = 2048") != std::string::npos);
  CHECK(c.description().find("test fallback") != std::string::npos);
  // An H below the trace's top_k is an error naming it.
  CHECK_THROWS_AS(MissCurves::from_trace(path, "sglang-lru", {128}, 1152, 1, fallback, 256), hisparse::Error);
  std::filesystem::remove(path);
}
