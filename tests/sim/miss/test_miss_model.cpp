// @brief Miss models: fast path, first step of an empty buffer, warm-up, the steady bound, exact totals by carry
// rounding, and the fit of a replayed trace.
#include <doctest/doctest.h>

#include "core/error.h"
#include "sim/miss/miss_model.h"

using namespace hisparse::sim;

TEST_CASE("statistical miss model: fast path, empty first step, steady fraction with carry") {
  StatisticalMissParams p;
  p.layers = 3;
  p.top_k = 8;
  p.H = 16;
  p.by_ratio = {{1.0, 0.25}, {2.0, 0.5}};
  const auto m = make_statistical_miss_model(p);
  double carry = 0;
  // n <= H: everything resident.
  CHECK(m->step(MissQuery{0, 5, 16, false}, carry).misses == 0);
  // First step of an empty buffer: all (K − 1) × layers = 21 non-newest selections miss.
  CHECK(m->step(MissQuery{0, 0, 40, true}, carry).misses == 21);
  // n/H = 1.5 → fraction 0.375 → 21 × 0.375 = 7.875 per step: over 8 steps exactly 63 in total.
  int64_t total = 0;
  carry = 0;
  for (int s = 1; s <= 8; ++s) total += m->step(MissQuery{0, s, 24, false}, carry).misses;
  CHECK(total == 63);
  CHECK(carry == doctest::Approx(0));
  // Beyond the last point the curve stays flat.
  carry = 0;
  CHECK(m->step(MissQuery{0, 3, 100, false}, carry).misses == 10);  // floor(21 × 0.5)
}

TEST_CASE("statistical miss model: warm-up phase, and the steady bound except while an empty buffer fills") {
  StatisticalMissParams p;
  p.layers = 2;
  p.top_k = 11;  // K − 1 = 10 selections per layer can miss
  p.H = 20;
  p.warmup_steps = 2;
  p.warmup_fraction = 0.5;
  p.by_ratio = {{1.0, 0.25}};
  const auto m = make_statistical_miss_model(p);
  auto misses = [&](int64_t step, int32_t n, bool empty) {
    double carry = 0;
    return m->step(MissQuery{0, step, n, empty}, carry).misses;
  };
  // n 100: the bound (100 − 20) / 10 > 1 never caps. Empty start: step 0 → 1 (20 rows), steps 1..2 → 0.5 (10 rows),
  // step 3 on → 0.25 (5 rows). A non-empty start charges its step 0 as warm-up too.
  CHECK(misses(0, 100, true) == 20);
  CHECK(misses(1, 100, true) == 10);
  CHECK(misses(2, 100, true) == 10);
  CHECK(misses(3, 100, true) == 5);
  CHECK(misses(0, 100, false) == 10);
  CHECK(misses(7, 100, false) == 5);
  // n 21 = H + 1: a full buffer leaves one row out, so at most 1 of 10 per layer (0.1): warm-up 0.5 → 0.1 and steady
  // 0.25 → 0.1 (2 rows over 2 layers). An empty start's warm-up is not capped (the buffer is still filling).
  CHECK(misses(1, 21, false) == 2);
  CHECK(misses(5, 21, false) == 2);
  CHECK(misses(5, 21, true) == 2);
  CHECK(misses(1, 21, true) == 10);
  CHECK(misses(0, 21, true) == 20);
  // Fast path whatever the phase.
  CHECK(misses(0, 20, true) == 0);
  CHECK(misses(1, 20, false) == 0);
}

TEST_CASE("statistical miss model rejects bad curves") {
  StatisticalMissParams p;
  p.by_ratio = {{2.0, 0.1}, {1.0, 0.2}};
  CHECK_THROWS_WITH_AS(make_statistical_miss_model(p), doctest::Contains("must ascend"), hisparse::Error);
  p.by_ratio = {{1.0, 1.5}};
  CHECK_THROWS_WITH_AS(make_statistical_miss_model(p), doctest::Contains("must be in [0, 1]"), hisparse::Error);
  p.by_ratio = {{1.0, 0.5}};
  p.warmup_fraction = -0.1;
  CHECK_THROWS_WITH_AS(make_statistical_miss_model(p), doctest::Contains("warmup_fraction -0.1"), hisparse::Error);
}

#include <cstdio>

#include "traces/trace_writer.h"

TEST_CASE("trace-replayed miss model follows the swap-in contract step by step") {
  // One request, 2 layers, K = 2, H = 2, empty start. Per layer:
  //   step 0: n = 4, T = [0, 1] → both miss (empty buffer)            → 2 misses
  //   step 1: n = 5, T = [0, 1] → both resident                        → 0
  //   step 2: n = 6, T = [2, 5] → 5 is the newest (reserved slot), 2 misses → 1
  // Totals over 2 layers: misses 4, 0, 2; selected 4, 4, 4.
  using namespace hisparse::traces;
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_sim_miss_trace.hstr";
  TraceMeta meta;
  meta.layers = 2;
  meta.top_k = 2;
  meta.initial_state = hisparse::InitialState::kEmpty;
  {
    auto w = make_native_writer(path, meta);
    const int32_t n[3] = {4, 5, 6};
    const int32_t sel[3][2] = {{0, 1}, {0, 1}, {2, 5}};
    for (int s = 0; s < 3; ++s) {
      StepRecord r;
      r.request_id = 9;
      r.step = s;
      r.seq_len = n[s];
      r.positions = {sel[s][0], sel[s][1], sel[s][0], sel[s][1]};
      w->write(r);
    }
    w->finish();
  }
  const ReplayedTrace t = replay_trace_counters(path, "sglang-lru", 2, 1152);
  REQUIRE(t.requests.size() == 1);
  REQUIRE(t.requests[0].size() == 3);
  CHECK(t.requests[0][0].misses == 4);
  CHECK(t.requests[0][1].misses == 0);
  CHECK(t.requests[0][2].misses == 2);
  CHECK(t.requests[0][2].newest_hits == 2);
  CHECK(t.empty_start);
  // Simulated steps past the trace wrap to step 1: s = 3 → 1, s = 4 → 2. Model layers 2 = trace layers (scale 1).
  const auto m = make_trace_miss_model(path, "sglang-lru", 2, 2, 1152);
  double carry = 0;
  CHECK(m->step(MissQuery{0, 0, 0, true}, carry).misses == 4);
  CHECK(m->step(MissQuery{0, 3, 0, false}, carry).misses == 0);
  CHECK(m->step(MissQuery{0, 4, 0, false}, carry).misses == 2);
  // The fit (sim/miss/miss_fitter.h): K 2, H 2 → warm-up W = ceil(2 / 2) = 1 step after the first. Per layer:
  //   step 0 (first): 2 of 2 usable miss (n 4: the newest, 3, is not selected)       → first step 4 / 4 = 1
  //   step 1 (warm-up): 0 of 2 miss                                                  → warm-up 0 / 4 = 0
  //   step 2 (steady, n/H 3): 1 of 1 usable misses (5 is the newest: selected − newest_hits = 1) → (3.0, 2 / 2 = 1)
  const StatisticalMissParams p = fit_statistical_miss_model(path, "sglang-lru", 2, 2, 1152);
  CHECK(p.first_step_fraction == doctest::Approx(1.0));
  CHECK(p.warmup_steps == 1);
  CHECK(p.warmup_fraction == doctest::Approx(0.0));
  REQUIRE(p.by_ratio.size() == 1);
  CHECK(p.by_ratio[0].first == doctest::Approx(3.0));
  CHECK(p.by_ratio[0].second == doctest::Approx(1.0));
  std::remove(path.c_str());
}
