// @brief replay --scenario's modelled step time (sim/replay/replay_step_time.h): each replayed decode step priced by
// the planner's step model with that step's misses; the same numbers as asking StepTimeModel directly, more misses
// never cheaper, nearest-rank quantiles, a rescaled trace priced at the same H/K, the outputs labelled modelled.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/replay/replay_step_time.h"

using namespace hisparse;

namespace {

/// A result of one configuration whose decode steps carry the given (seq_len, misses summed over layers).
sim::ReplayResult result_of(int32_t layers, int32_t K, int32_t H, const std::vector<std::pair<int32_t, int32_t>>& steps) {
  sim::ReplayResult r;
  r.meta.layers = layers;
  r.meta.top_k = K;
  sim::ReplayConfigStats s;
  s.policy = "sglang-lru";
  s.buffer_size = H;
  for (const auto& [n, m] : steps) {
    r.step_seq_lens.push_back(n);
    s.step_misses.push_back(m);
  }
  r.configs.push_back(s);
  return r;
}

}  // namespace

TEST_CASE("replay step time: every step priced as StepTimeModel prices it, more misses never cheaper") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const sim::CostParams cost;
  const int32_t K = s.deployment.hisparse.top_k;  // 2048
  const int32_t L = 8;                            // trace layers (the model has more: the fraction carries over)
  // 100 steps at n = 20000: 98 without a miss, one with half of the K - 1 selections missing in every layer, one with
  // all of them.
  std::vector<std::pair<int32_t, int32_t>> steps(98, {20000, 0});
  steps.push_back({20000, (K - 1) * L / 2});
  steps.push_back({20000, (K - 1) * L});
  const sim::ReplayResult r = result_of(L, K, 4096, steps);
  const int64_t batch = 16;
  const sim::ReplayStepTimeReport rep = sim::model_replay_step_times(s, cost, r, batch, "a test batch");
  REQUIRE(rep.configs.size() == 1);
  const sim::ReplayStepTime& t = rep.configs[0];

  Scenario sc = s;
  sc.deployment.hisparse.device_buffer_size = 4096;
  auto direct = [&](double fraction) {
    const sim::StepTimeModel m(sc, cost, true, [fraction](int64_t) { return fraction; });
    return static_cast<double>(m.step(batch, 20000).step_ns) / 1e6;
  };
  const double none = direct(0), half = direct(0.5), all = direct(1.0);
  MESSAGE("expected: p50 and p99 = the no-miss step (98 of 100 steps), max = the all-miss step, as StepTimeModel says");
  CHECK(t.steps == 100);
  CHECK(t.p50_ms == doctest::Approx(none).epsilon(1e-12));
  CHECK(t.p99_ms == doctest::Approx(half).epsilon(1e-12));  // nearest rank: the 99th of 100 sorted values
  CHECK(t.max_ms == doctest::Approx(all).epsilon(1e-12));
  CHECK(t.mean_ms == doctest::Approx((98 * none + half + all) / 100));
  MESSAGE("expected: misses cost time at 16 requests per rank (the copy is on the step's path)");
  CHECK(none < half);
  CHECK(half < all);
  CHECK(t.over_slo == (none > rep.slo_ms ? 98 : 0) + (half > rep.slo_ms) + (all > rep.slo_ms));
  CHECK(rep.slo_ms == s.deployment.tpot_slo_ms);
  CHECK(t.scenario_buffer_size == 4096);

  const std::string text = sim::format_step_times(rep);
  const std::string json = sim::step_times_json(rep);
  MESSAGE("expected: both outputs say the figures are modelled and state the batch and why");
  CHECK(text.find("MODELLED") != std::string::npos);
  CHECK(text.find("a batch of 16 requests per DP rank (a test batch)") != std::string::npos);
  CHECK(json.find("\"modelled\": true") != std::string::npos);
  CHECK(json.find("\"batch_per_rank\": 16") != std::string::npos);
}

TEST_CASE("replay step time: a trace at another top_k is priced at the same H/K; bad inputs refused") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  MESSAGE("expected: H 512 of a K 256 trace is priced at H = 2 x the scenario's K");
  const sim::ReplayResult r = result_of(4, 256, 512, {{3000, 10}, {3001, 0}});
  const auto rep = sim::model_replay_step_times(s, sim::CostParams{}, r, 1, "one");
  CHECK(rep.configs[0].scenario_buffer_size == 2 * s.deployment.hisparse.top_k);
  CHECK_THROWS_AS(sim::model_replay_step_times(s, sim::CostParams{}, r, 0, "none"), Error);
  sim::ReplayResult bad = r;
  bad.configs[0].step_misses.pop_back();  // the counts must match the steps
  CHECK_THROWS_WITH_AS(sim::model_replay_step_times(s, sim::CostParams{}, bad, 1, "one"),
                       doctest::Contains("per-step miss counts"), Error);
}

TEST_CASE("replay step time: a cold first step sets the cold-start p99, not the steady state's") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const sim::CostParams cost;
  // One request of 10 steps at H 4096, K 2048: steps 0..2 are cold start (ceil(H/K) = 2); step 0 misses every
  // selection, the steady steps miss nothing.
  sim::ReplayResult r = result_of(8, 2048, 4096, {{20000, 8 * 2047}, {20001, 0}, {20002, 0}, {20003, 0}, {20004, 0},
                                                  {20005, 0}, {20006, 0}, {20007, 0}, {20008, 0}, {20009, 0}});
  for (int32_t j = 0; j < 10; ++j) r.step_index.push_back(j);
  const sim::ReplayStepTimeReport rep = sim::model_replay_step_times(s, cost, r, 1, "one request");
  REQUIRE(rep.configs.size() == 1);
  const sim::ReplayStepTime& t = rep.configs[0];
  CHECK(t.cold_steps == 3);
  // Over every step the p99 is the cold step (the max); apart, the steady p99 is a step without misses.
  CHECK(t.p99_ms == doctest::Approx(t.max_ms));
  CHECK(t.cold_p99_ms == doctest::Approx(t.max_ms));
  CHECK(t.steady_p99_ms < t.max_ms);
  CHECK(t.steady_p99_ms == doctest::Approx(t.steady_p50_ms).epsilon(1e-3));
  CHECK(sim::format_step_times(rep).find("cold start (each request's first step and warm-up") != std::string::npos);
  CHECK(sim::step_times_json(rep).find("\"cold_start\": {\"steps\": 3, ") != std::string::npos);
}
