// @brief MissFitter against known answers: uniform random selections (the n/H dependence), a cyclic pattern (the H/K
// thresholds of the swap-in contract), the first-step / warm-up / steady split, one binning behind every fit, the
// plan's buffer sweep, a trace at another top_k, the steady-state bound, and the held-out length check.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/miss/miss_fitter.h"
#include "sim/miss/miss_holdout.h"
#include "sim/miss/miss_model.h"
#include "sim/plan/capacity_plan.h"
#include "sim/serving/serving_simulation.h"
#include "sim/miss/miss_curve.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::string scratch(const std::string& stem) { return std::string(HISPARSE_BINARY_DIR) + "/test_sim_" + stem; }

/// Writes a native trace whose step s of request r selects `select(r, s, layer)` (K entries, -1 padded).
template <typename Select>
void write_trace(const std::string& path, int32_t layers, int32_t K, InitialState init,
                 const std::vector<std::vector<int32_t>>& seq_lens, Select select) {
  traces::TraceMeta meta;
  meta.layers = layers;
  meta.top_k = K;
  meta.initial_state = init;
  auto w = traces::make_native_writer(path, meta);
  for (size_t r = 0; r < seq_lens.size(); ++r) {
    for (size_t s = 0; s < seq_lens[r].size(); ++s) {
      traces::StepRecord rec;
      rec.request_id = static_cast<int64_t>(r);
      rec.step = static_cast<int64_t>(s);
      rec.seq_len = seq_lens[r][s];
      for (int32_t l = 0; l < layers; ++l) {
        std::vector<int32_t> sel = select(r, s, l, rec.seq_len);
        sel.resize(static_cast<size_t>(K), -1);
        rec.positions.insert(rec.positions.end(), sel.begin(), sel.end());
      }
      w->write(rec);
    }
  }
  w->finish();
}

std::string generated_trace(const std::string& stem, int32_t K) {
  traces::GeneratorOptions g;
  g.requests = 2;
  g.steps = 40;
  g.layers = 3;
  g.top_k = K;
  g.prompt_len = 1500;  // n runs 1500..1539
  g.initial_state = InitialState::kEmpty;
  g.seed = 11;
  const std::string path = scratch(stem + ".hst");
  auto src = traces::make_generated_trace(g);
  auto w = traces::make_native_writer(path, src->meta());
  traces::copy_trace(*src, *w);
  return path;
}

}  // namespace

TEST_CASE("uniform random selections: the LRU steady fraction is 1 − H/(n − 1) at every (H, n)") {
  // Each step selects K − 1 distinct positions uniformly from the n − 1 non-newest ones, plus the newest n − 1; n is
  // fixed per request. Whatever the buffer holds, it is H distinct rows chosen without looking at the next step's
  // draw (the identity start fills it with rows 0..H−1 < n − 1 at once, and LRU keeps it full), so each selection is
  // resident with probability H / (n − 1): the expected miss fraction is 1 − H / (n − 1), from the first step on.
  constexpr int32_t K = 64, L = 2, steps = 150;
  const std::vector<int32_t> ns = {320, 512, 1024};
  std::vector<std::vector<int32_t>> seq_lens;
  for (int32_t n : ns) seq_lens.push_back(std::vector<int32_t>(steps, n));
  std::mt19937_64 rng(2024);
  const std::string path = scratch("uniform.hst");
  write_trace(path, L, K, InitialState::kIdentity, seq_lens, [&](size_t, size_t, int32_t, int32_t n) {
    std::vector<int32_t> pool(static_cast<size_t>(n - 1));
    std::iota(pool.begin(), pool.end(), 0);
    for (int32_t i = 0; i < K - 1; ++i) {  // partial Fisher-Yates: K − 1 distinct positions
      std::uniform_int_distribution<int32_t> pick(i, n - 2);
      std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(pick(rng))]);
    }
    std::vector<int32_t> sel(pool.begin(), pool.begin() + (K - 1));
    sel.push_back(n - 1);
    return sel;
  });
  MissFitter fitter;
  replay_into_fitter(fitter, path, {"sglang-lru"}, {128, 256}, {2.0, 4.0}, 1152, 1);
  const MissSurface s = fitter.surface("uniform");
  for (int32_t H : {128, 256}) {
    CAPTURE(H);
    // Each request's n/H lands in its own bin: one steady point per n, at exactly n/H.
    const MissColumn c = fitter.column("sglang-lru", static_cast<double>(H) / K);
    REQUIRE(c.steady.size() == ns.size());
    double mean = 0;
    for (int32_t n : ns) {
      CAPTURE(n);
      const double expected = 1.0 - static_cast<double>(H) / (n - 1);
      mean += expected / static_cast<double>(ns.size());
      // ~18,000 selections per point: a standard error near 0.004.
      CHECK(std::abs(s.fraction("sglang-lru", H, n, K) - expected) < 0.02);
    }
    // The first step and the warm-up pool the three requests with equal weight (K − 1 selections per step-layer
    // each), and a buffer of unrelated rows holds a random selection just as often: the mean of the three. Fewer
    // samples (a few hundred per phase), so a wider margin.
    CHECK(std::abs(c.warmup - mean) < 0.06);
    CHECK(std::abs(c.first_step - mean) < 0.08);
  }
  std::filesystem::remove(path);
}

TEST_CASE("cyclic groups: the LRU steady fraction is 1 below the loop, 0 once it fits, and partial in between") {
  // C disjoint groups of K − 1 positions (group g = positions g(K−1) .. (g+1)(K−1) − 1), visited round robin, plus the
  // newest token, which has the reserved slot and never occupies one of the H slots. Swap-in contract
  // (cpu_ref/swap_in.cpp): a step's resident selections are hits; its misses evict the least recently used
  // non-selected slots (untouched empty slots first). So after one round the buffer holds the most recently visited
  // groups whole, and with H = q(K−1) + r (0 <= r < K−1) the q most recent groups plus r rows of the next one.
  // Visiting g, the group seen C steps ago, it holds min(K−1, max(0, H − (C−1)(K−1))) of g's rows:
  //   H <= (C−1)(K−1): 0 resident → fraction 1;   H >= C(K−1): all resident → 0;
  //   H = (C−1)(K−1) + r: r resident → (K−1−r)/(K−1), the r rows of g survive because its misses evict the next
  //   oldest group's rows instead (a step's hits are never evicted).
  // The first round (steps 0..C−1, all compulsory misses) ends within the warm-up ceil(H/K) whenever H >= C(K−1)
  // (ceil(C(K−1)/K) = C for C < K), so it never reaches the steady curve of the H that hold the loop.
  constexpr int32_t K = 16, C = 6, L = 2, steps = 60, n0 = 200;
  constexpr int32_t G = K - 1;
  std::vector<std::vector<int32_t>> seq_lens(1);
  for (int32_t s = 0; s < steps; ++s) seq_lens[0].push_back(n0 + s);
  const std::string path = scratch("cyclic.hst");
  write_trace(path, L, K, InitialState::kEmpty, seq_lens, [&](size_t, size_t s, int32_t, int32_t n) {
    std::vector<int32_t> sel;
    const int32_t g = static_cast<int32_t>(s) % C;
    for (int32_t i = 0; i < G; ++i) sel.push_back(g * G + i);
    sel.push_back(n - 1);
    return sel;
  });
  struct Case {
    int32_t H;
    double steady;
  };
  const Case cases[] = {
      {60, 1.0},                        // clearly below the loop
      {(C - 1) * G, 1.0},               // 75: the last size that thrashes
      {(C - 1) * G + 5, (G - 5.0) / G}, // 80: 5 of 15 survive
      {C * G, 0.0},                     // 90: the loop fits
      {C * G + K, 0.0},                 // 106
  };
  std::vector<int32_t> sizes;
  std::vector<double> keys;
  for (const Case& c : cases) {
    sizes.push_back(c.H);
    keys.push_back(static_cast<double>(c.H) / K);
  }
  MissFitter fitter;
  replay_into_fitter(fitter, path, {"sglang-lru"}, sizes, keys, 1152, 1);
  const MissSurface s = fitter.surface("cyclic");
  for (const Case& c : cases) {
    CAPTURE(c.H);
    const MissColumn col = fitter.column("sglang-lru", static_cast<double>(c.H) / K);
    // n 200..259 spreads n/H over a few bins: every steady point must carry the same exact fraction.
    REQUIRE_FALSE(col.steady.empty());
    for (const auto& [r, f] : col.steady) CHECK(f == doctest::Approx(c.steady).epsilon(1e-12));
    CHECK(s.fraction("sglang-lru", c.H, n0 + steps - 1, K) == doctest::Approx(c.steady).epsilon(1e-12));
    // The first step of an empty buffer misses everything.
    CHECK(col.first_step == 1.0);
    CHECK(col.first_step_samples == L);
    CHECK(col.warmup_samples == L * ((c.H + K - 1) / K));
  }
  // H = 90 holds the loop: the warm-up (steps 1..6) still carries the first round's compulsory misses of groups 1..5
  // (5 × 15 of 6 × 15), the steady state none. The phases are reported apart.
  const MissColumn fits = fitter.column("sglang-lru", static_cast<double>(C * G) / K);
  CHECK(fits.warmup == doctest::Approx(5.0 / 6.0));
  CHECK(fits.samples == L * (steps - 1 - 6));
  std::filesystem::remove(path);
}

TEST_CASE("the fitter keeps the first step and the warm-up out of the steady curve and reports them apart") {
  // K 4, H 8 → warm-up W = ceil(8 / 4) = 2 steps after the first. One layer, n 20 (n/H 2.5). The request's steps are
  // numbered from 10, so the phases must be counted from its first step, not from 0.
  MissFitter f;
  f.begin_trace(4, {MissFitConfig{"p", 8, 2.0}});
  ReplayRequestRows rr;
  rr.request_id = 3;
  rr.steps = {10, 11, 12, 13, 14, 15, 16};
  rr.rows.assign(1, std::vector<std::vector<ReplayStepRow>>(1));
  auto& rows = rr.rows[0][0];
  //              n  selected hits newest misses
  rows.push_back({20, 4, 0, 1, 3});  // step 10: first → 3 of 3
  rows.push_back({20, 4, 1, 1, 2});  // 11: warm-up → 2 of 3
  rows.push_back({20, 4, 2, 1, 1});  // 12: warm-up → 1 of 3
  rows.push_back({20, 4, 3, 1, 0});  // 13: steady → 0 of 3
  rows.push_back({20, 4, 2, 1, 1});  // 14: steady → 1 of 3
  rows.push_back({20, 4, 2, 0, 2});  // 15: steady, newest not selected → 2 of 4 (usable = selected − newest_hits)
  rows.push_back({8, 4, 3, 1, 0});   // 16: n <= H, the fast path → skipped
  f.add(rr);
  const MissColumn c = f.column("p", 2.0);
  CHECK(c.first_step == 1.0);
  CHECK(c.first_step_samples == 1);
  CHECK(c.warmup == doctest::Approx(3.0 / 6.0));
  CHECK(c.warmup_samples == 2);
  REQUIRE(c.steady.size() == 1);
  CHECK(c.steady[0].first == doctest::Approx(2.5));
  CHECK(c.steady[0].second == doctest::Approx(3.0 / 10.0));  // (0 + 1 + 2) / (3 + 3 + 4); "selected − 1" gives 3/9
  CHECK(c.samples == 3);
  CHECK(c.n_over_h_min == doctest::Approx(2.5));
  CHECK(c.n_over_h_max == doctest::Approx(2.5));
  // A second trace at another K pools into the same column at equal H/K (K 8, H 16: W 2 again).
  f.begin_trace(8, {MissFitConfig{"p", 16, 2.0}});
  ReplayRequestRows r2;
  r2.steps = {0, 1, 2, 3};
  r2.rows.assign(1, std::vector<std::vector<ReplayStepRow>>(1));
  r2.rows[0][0] = {{64, 8, 0, 1, 7}, {64, 8, 7, 1, 0}, {64, 8, 7, 1, 0}, {64, 8, 0, 1, 7}};
  f.add(r2);
  const MissColumn p = f.column("p", 2.0);
  CHECK(p.first_step == 1.0);
  CHECK(p.first_step_samples == 2);
  CHECK(p.warmup == doctest::Approx(3.0 / 20.0));  // (2 + 1 + 0 + 0) / (3 + 3 + 7 + 7)
  REQUIRE(p.steady.size() == 2);                   // n/H 2.5 in [2, 3), 4 in [4, 6)
  CHECK(p.steady[1].first == doctest::Approx(4.0));
  CHECK(p.steady[1].second == 1.0);
  CHECK(p.samples == 4);
}

TEST_CASE("one binning: fit_statistical_miss_model, MissCurves::from_trace and the YAML writer agree") {
  const std::string path = generated_trace("one_binning", 256);
  const int32_t H = 512;
  const StatisticalMissParams p = fit_statistical_miss_model(path, "sglang-lru", H, 3, 1152);
  const MissCurves c = MissCurves::from_trace(path, "sglang-lru", {256, H}, 1152, 1, MissCurves::constant(0.5, "test"),
                                              256);
  MissFitter fitter;
  replay_into_fitter(fitter, path, {"sglang-lru"}, {H}, {2.0}, 1152, 1);
  MissSurface s = fitter.surface("one");
  const std::string yaml = scratch("one_binning.yaml");
  {
    std::ofstream(yaml) << miss_surface_to_yaml(s, {});
  }
  const MissSurface loaded = load_miss_surface(yaml);
  const MissColumn& col = loaded.columns("sglang-lru").front();
  REQUIRE_FALSE(p.by_ratio.empty());
  CHECK(c.curve(H).by_ratio == p.by_ratio);  // bit for bit: the same function on the same samples
  CHECK(c.curve(H).warmup == p.warmup_fraction);
  CHECK(p.warmup_steps == 2);
  REQUIRE(col.steady.size() == p.by_ratio.size());
  for (size_t i = 0; i < p.by_ratio.size(); ++i) {
    CHECK(std::abs(col.steady[i].first - p.by_ratio[i].first) <= 0.5e-4 + 1e-12);   // kRatioDigits
    CHECK(std::abs(col.steady[i].second - p.by_ratio[i].second) <= 0.5e-6 + 1e-12); // kFractionDigits
  }
  CHECK(std::abs(col.warmup - p.warmup_fraction) <= 0.5e-6 + 1e-12);
  // Steady samples: 2 requests × (40 steps − the first − W warm-up steps) × 3 layers, every n 1500+ > H.
  CHECK(c.curve(256).slow_step_layers == 2 * (40 - 1 - 1) * 3);
  CHECK(c.curve(H).slow_step_layers == 2 * (40 - 1 - 2) * 3);
  CHECK(col.samples == 2 * (40 - 1 - 2) * 3);
  std::filesystem::remove(path);
  std::filesystem::remove(yaml);
}

TEST_CASE("the plan's buffer sweep varies with H without a trace") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const int32_t K = s.deployment.hisparse.top_k;
  const MissCurves m = default_miss_curves(s);
  const int64_t n = 65536;
  CHECK(m.fraction(K, n) != m.fraction(4 * K, n));
  CHECK(m.fraction(K, n) > m.fraction(4 * K, n));
  const CapacityPlan plan = compute_capacity_plan(s, PlanOptions{}, m);
  std::set<double> at_longest;
  const int64_t longest = plan.options.seq_lens.empty() ? 0 : plan.options.seq_lens.back();
  for (const SweepRow& r : plan.sweep_buffer)
    if (r.seq_len == longest && r.value < longest) at_longest.insert(r.miss_fraction);
  CAPTURE(longest);
  CHECK(at_longest.size() > 1);
}

TEST_CASE("a trace at another top_k: an error naming both K, or a replay at the same H/K when rescaled") {
  const std::string path = generated_trace("other_k", 256);
  const MissCurves fallback = MissCurves::constant(0.5, "test fallback");
  CHECK_THROWS_WITH_AS(MissCurves::from_trace(path, "sglang-lru", {4096}, 1152, 1, fallback, 2048),
                       doctest::Contains("top_k 256 but the scenario's top_k is 2048"), Error);
  CHECK_THROWS_WITH_AS(MissCurves::from_trace(path, "sglang-lru", {4096}, 1152, 1, fallback, 2048),
                       doctest::Contains("--rescale-trace-top-k"), Error);
  CHECK_THROWS_WITH_AS(MissCurves::from_trace(path, "sglang-lru", {4096}, 1152, 1, fallback, 2048),
                       doctest::Contains(path.c_str()), Error);
  // Rescaled: H 2048, 4096 at K 2048 replay at H_t = 256, 512 (H / 8), read at the same n/H.
  const MissCurves r = MissCurves::from_trace(path, "sglang-lru", {2048, 4096}, 1152, 1, fallback, 2048, true);
  CHECK(r.curve(2048).replayed_H == 256);
  CHECK(r.curve(4096).replayed_H == 512);
  CHECK(r.description().find("rescaled from K=256 to K=2048") != std::string::npos);
  const MissCurves own = MissCurves::from_trace(path, "sglang-lru", {256, 512}, 1152, 1, fallback, 256);
  CHECK(r.curve(4096).by_ratio == own.curve(512).by_ratio);
  // n/H 3: 12288 at H 4096 ↔ 1536 at H 512 (the bound is 1 in both).
  CHECK(r.fraction(4096, 12288) == doctest::Approx(own.fraction(512, 1536)));
  std::filesystem::remove(path);
}

TEST_CASE("the steady bound: at n = H + 1 at most one of the K − 1 selections can miss") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const int32_t K = s.deployment.hisparse.top_k;
  const MissCurves m = default_miss_curves(s);
  for (int32_t H : {K, 2 * K, 4 * K, 8 * K}) {
    CAPTURE(H);
    CHECK(m.fraction(H, H + 1) <= 1.0 / (K - 1) + 1e-15);
    CHECK(m.fraction(H, H) == 0.0);
  }
  // The statistical model of the scenario: one row per layer at most.
  StatisticalMissParams p = default_miss_params(s);
  const auto model = make_statistical_miss_model(p);
  double carry = 0;
  const MissResult r = model->step(MissQuery{0, 50, p.H + 1, false}, carry);
  CHECK(static_cast<double>(r.misses) + carry <= p.layers + 1e-9);
  CHECK(steady_miss_bound(100, 101, 1) == 0.0);  // K 1: only the newest token is selected
  CHECK(steady_miss_bound(100, 5000, 64) == 1.0);
}

TEST_CASE("extrapolation: a replayed trace covers every length it recorded; the range used is named") {
  // n runs 1500..1539; at H 512 (W = 2) the steady state starts at the third step, so n = 1500 and 1501 are below
  // the steady n/H range yet recorded by the trace: not extrapolated. Past the recorded lengths they are.
  const std::string path = generated_trace("coverage", 256);
  const int32_t H = 512;
  const MissCurves c = MissCurves::from_trace(path, "sglang-lru", {H}, 1152, 1, MissCurves::constant(0.5, "test"), 256);
  REQUIRE(c.curve(H).ratio_min > 1500.0 / H);  // the first steps are outside the steady range
  CHECK_FALSE(c.extrapolated(H, 1500));
  CHECK_FALSE(c.extrapolated(H, 1539));
  CHECK(c.extrapolated(H, 1540));
  CHECK(c.extrapolated(H, 1400));
  CHECK(c.measured_range(H).find("the replayed trace's steady state at H 512") == 0);
  CHECK(c.measured_range(H).find("it recorded n 1500..1539") != std::string::npos);
  std::filesystem::remove(path);
  // A surface names itself and the column(s) read at H/K: between two columns both, at one column that one.
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const MissCurves m = default_miss_curves(s);
  const int32_t K = s.deployment.hisparse.top_k;
  CHECK(m.measured_range(4 * K).find("miss surface gemma3-270m-field, its column H/K 4 (n/H ") == 0);  // K 2048
  CHECK(m.measured_range(5 * K).find("its columns H/K 4 (n/H ") != std::string::npos);
  CHECK(m.measured_range(5 * K).find(" and H/K 6 (n/H ") != std::string::npos);
  CHECK(m.measured_range(16 * K).find("its last column H/K 8 (") != std::string::npos);
  CHECK(MissCurves::constant(0.1, "given").measured_range(K).empty());
}

TEST_CASE("held-out lengths: the training fit predicts the held-out requests' steady fraction by interpolation in n/H") {
  // Uniform random selections (the first test's pattern: LRU misses 1 − H/(n − 1) in expectation), one request per n.
  // Holding out n = 400 and 1024 leaves the training requests at n/H 2.5, 4, 5 (H = 128; 4 and 5 share the bin
  // [4, 6), so two training points: 2.5 and 4.5); the held-out points are 3.125
  // (between training points: predicted by the linear interpolation, off by its chord error, ~0.02) and 8 (beyond
  // the training range: flagged extrapolated, predicted by the last training point, off by ~0.08).
  constexpr int32_t K = 64, L = 2, steps = 120, H = 128;
  const std::vector<int32_t> ns = {320, 400, 512, 640, 1024};
  std::vector<std::vector<int32_t>> seq_lens;
  for (int32_t n : ns) seq_lens.push_back(std::vector<int32_t>(steps, n));
  std::mt19937_64 rng(7);
  const std::string path = scratch("holdout.hst");
  write_trace(path, L, K, InitialState::kIdentity, seq_lens, [&](size_t, size_t, int32_t, int32_t n) {
    std::vector<int32_t> pool(static_cast<size_t>(n - 1));
    std::iota(pool.begin(), pool.end(), 0);
    for (int32_t i = 0; i < K - 1; ++i) {
      std::uniform_int_distribution<int32_t> pick(i, n - 2);
      std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(pick(rng))]);
    }
    std::vector<int32_t> sel(pool.begin(), pool.begin() + (K - 1));
    sel.push_back(n - 1);
    return sel;
  });
  MissFitter train, held;
  HoldoutSplit split{{400, 1024}};
  const FitSplit fs{&held, [&split](const ReplayRequestRows& rr) { return split.holds(rr); }};
  replay_into_fitter(train, path, {"sglang-lru"}, {H}, {2.0}, 1152, 1, nullptr, &fs);
  const HoldoutReport rep = compare_held_out(train, held);
  // Exactly the two held-out requests' points, n/H ascending; the training column has the other three in two bins.
  REQUIRE(rep.points.size() == 2);
  CHECK(train.column("sglang-lru", 2.0).steady.size() == 2);
  CHECK(rep.unpredicted.empty());
  const auto expected = [](double n) { return 1.0 - static_cast<double>(H) / (n - 1); };
  CHECK(rep.points[0].n_over_h == doctest::Approx(400.0 / H));
  CHECK(rep.points[1].n_over_h == doctest::Approx(1024.0 / H));
  CHECK(std::abs(rep.points[0].measured - expected(400)) < 0.02);
  CHECK(std::abs(rep.points[1].measured - expected(1024)) < 0.02);
  // The prediction is the training curve read as MissSurface reads it; inside its range it is close, beyond it not.
  CHECK(rep.points[0].predicted == doctest::Approx(interpolate_ratio_curve(train.column("sglang-lru", 2.0).steady,
                                                                           400.0 / H)));
  CHECK_FALSE(rep.points[0].extrapolated);
  CHECK(rep.points[1].extrapolated);
  CHECK(std::abs(rep.points[0].predicted - rep.points[0].measured) < 0.035);
  CHECK(rep.points[1].measured - rep.points[1].predicted > 0.05);
  CHECK(rep.inside == 1);
  CHECK(rep.max_abs_error == doctest::Approx(std::abs(rep.points[1].predicted - rep.points[1].measured)));
  CHECK(rep.mean_abs_error_inside == doctest::Approx(std::abs(rep.points[0].predicted - rep.points[0].measured)));
  // Holding out a length no request reaches leaves nothing to check: an error, not an empty report.
  MissFitter train2, held2;
  HoldoutSplit none{{5000}};
  const FitSplit fs2{&held2, [&none](const ReplayRequestRows& rr) { return none.holds(rr); }};
  replay_into_fitter(train2, path, {"sglang-lru"}, {H}, {2.0}, 1152, 1, nullptr, &fs2);
  CHECK_THROWS_AS(compare_held_out(train2, held2), Error);
  std::filesystem::remove(path);
}
