// @brief Miss surface (scenarios/miss_models): evaluation in n/H and H/K, the fast path and the steady bound, what
// counts as extrapolated, the strict YAML round trip, the shipped surfaces, and its use as the default model.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/miss/miss_surface.h"
#include "sim/miss/miss_curve.h"
#include "sim/serving/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::string write_yaml(const std::string& stem, const std::string& text) {
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_sim_" + stem + ".yaml";
  std::ofstream(path) << text;
  return path;
}

// Two columns at K-independent coordinates: H/K 1 and 3.
const char* kHand = R"yaml(# a hand-made surface (comments must load)
name: hand
policies:
  sglang-lru:
    - h_over_k: 1
      first_step: 0.9
      first_step_samples: 10
      warmup: 0.5
      warmup_samples: 20
      steady:
        - [2, 0.4]
        - [4, 0.6]
      samples: 100
      n_over_h: [1.5, 5]
    - h_over_k: 3
      first_step: 0.7
      first_step_samples: 10
      warmup: 0.3
      warmup_samples: 20
      steady:
        - [2, 0.2]
        - [8, 0.2]
      samples: 100
      n_over_h: [1.5, 10]
provenance:
  command: "hand"
  fraction: "misses / usable"
  warmup_rule: "ceil(H/K)"
  traces:
    - path: "none"
      layers: 1
      top_k: 100
      initial_state: identity
      requests: 1
      decode_steps: 1
      n_range: [150, 1000]
)yaml";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("surface evaluation: linear in n/H within a column, in H/K between columns, fast path, steady bound") {
  const std::string path = write_yaml("surface_hand", kHand);
  const MissSurface s = load_miss_surface(path);
  CHECK(s.name == "hand");
  CHECK(s.has_provenance);
  constexpr int32_t K = 100;
  // H/K 1 (H 100): n/H 3 lies halfway between (2, 0.4) and (4, 0.6) → 0.5; the bound (300 − 100) / 99 > 1 does not cap.
  CHECK(s.fraction("sglang-lru", 100, 300, K) == doctest::Approx(0.5));
  // n/H 1.5 is below the first point → flat 0.4; the bound 50 / 99 = 0.505 does not cap.
  CHECK(s.fraction("sglang-lru", 100, 150, K) == doctest::Approx(0.4));
  // n 120: 0.4 flat, but a full buffer leaves at most 20 rows out: 20 / 99.
  CHECK(s.fraction("sglang-lru", 100, 120, K) == doctest::Approx(20.0 / 99));
  // n/H 10 is beyond the last point → flat 0.6.
  CHECK(s.fraction("sglang-lru", 100, 1000, K) == doctest::Approx(0.6));
  // H/K 2 is halfway between the columns: (0.5 + 0.2) / 2 at n/H 3.
  CHECK(s.fraction("sglang-lru", 200, 600, K) == doctest::Approx(0.35));
  CHECK(s.fraction("sglang-lru", 300, 900, K) == doctest::Approx(0.2));
  // H/K 8 is beyond the last column → that column, flat.
  CHECK(s.fraction("sglang-lru", 800, 2400, K) == doctest::Approx(0.2));
  // The fast path: nothing misses while n <= H.
  CHECK(s.fraction("sglang-lru", 300, 300, K) == 0.0);
  CHECK(s.fraction("sglang-lru", 300, 10, K) == 0.0);
  // Warm-up and first step: linear in H/K (0.5 → 0.3 and 0.9 → 0.7 over H/K 1 → 3).
  CHECK(s.warmup_fraction("sglang-lru", 200, K) == doctest::Approx(0.4));
  CHECK(s.first_step_fraction("sglang-lru", 200, K) == doctest::Approx(0.8));
  CHECK(s.warmup_fraction("sglang-lru", 50, K) == doctest::Approx(0.5));
  // The merged curve at H/K 2 breaks at both columns' points: 2 → 0.3, 4 → (0.6 + 0.2) / 2, 8 → (0.6 + 0.2) / 2.
  const RatioCurve mid = s.steady_curve("sglang-lru", 2.0);
  REQUIRE(mid.size() == 3);
  CHECK(mid[0].first == 2.0);
  CHECK(mid[0].second == doctest::Approx(0.3));
  CHECK(mid[1].second == doctest::Approx(0.4));
  CHECK(mid[2].first == 8.0);
  CHECK(mid[2].second == doctest::Approx(0.4));
  CHECK_THROWS_WITH_AS(s.fraction("fifo", 100, 300, K), doctest::Contains("no columns for policy 'fifo'"), Error);
  std::remove(path.c_str());
}

TEST_CASE("surface extrapolation: outside the measured n/H of a column read, or outside the H/K columns") {
  const std::string path = write_yaml("surface_extra", kHand);
  const MissSurface s = load_miss_surface(path);
  constexpr int32_t K = 100;
  CHECK_FALSE(s.extrapolation("sglang-lru", 100, 300, K).any());    // n/H 3 in [1.5, 5]
  CHECK(s.extrapolation("sglang-lru", 100, 600, K).n_over_h);       // n/H 6 > 5
  CHECK_FALSE(s.extrapolation("sglang-lru", 100, 600, K).h_over_k);
  CHECK_FALSE(s.extrapolation("sglang-lru", 200, 1000, K).any());   // n/H 5: inside both columns' ranges
  CHECK(s.extrapolation("sglang-lru", 200, 1100, K).n_over_h);      // n/H 5.5: outside H/K 1's range
  CHECK(s.extrapolation("sglang-lru", 300, 3000, K).any() == false);  // n/H 10 is H/K 3's measured end
  CHECK(s.extrapolation("sglang-lru", 800, 2400, K).h_over_k);      // H/K 8 > 3
  CHECK_FALSE(s.extrapolation("sglang-lru", 800, 800, K).any());    // fast path: exact, nothing read
  // MissCurves passes it through.
  const MissCurves c = MissCurves::from_surface(s, "sglang-lru", K);
  CHECK(c.extrapolated(100, 600));
  CHECK_FALSE(c.extrapolated(100, 300));
  std::remove(path.c_str());
}

TEST_CASE("surface YAML: write → load evaluates identically, and writing again gives the same bytes") {
  const std::string path = write_yaml("surface_rt_in", kHand);
  const MissSurface a = load_miss_surface(path);
  const std::string text = miss_surface_to_yaml(a, {"round trip", "", "of the hand surface"});
  CHECK(text.rfind("# round trip\n#\n# of the hand surface\n", 0) == 0);
  const std::string out = write_yaml("surface_rt_out", text);
  const MissSurface b = load_miss_surface(out);
  CHECK(b.name == a.name);
  REQUIRE(b.policies.size() == a.policies.size());
  for (const auto& [policy, cols] : a.policies) {
    REQUIRE(b.policies.at(policy).size() == cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      const MissColumn &x = cols[i], &y = b.policies.at(policy)[i];
      CHECK(x.h_over_k == y.h_over_k);
      CHECK(x.first_step == y.first_step);
      CHECK(x.first_step_samples == y.first_step_samples);
      CHECK(x.warmup == y.warmup);
      CHECK(x.warmup_samples == y.warmup_samples);
      CHECK(x.steady == y.steady);
      CHECK(x.samples == y.samples);
      CHECK(x.n_over_h_min == y.n_over_h_min);
      CHECK(x.n_over_h_max == y.n_over_h_max);
    }
  }
  REQUIRE(b.provenance.traces.size() == 1);
  CHECK(b.provenance.command == "hand");
  CHECK(b.provenance.traces[0].n_max == 1000);
  for (int32_t H : {100, 150, 200, 300, 500})
    for (int64_t n : {101, 150, 300, 777, 5000}) CHECK(a.fraction("sglang-lru", H, n, 100) == b.fraction("sglang-lru", H, n, 100));
  CHECK(miss_surface_to_yaml(b, {"round trip", "", "of the hand surface"}) == text);
  std::remove(path.c_str());
  std::remove(out.c_str());
}

TEST_CASE("bad surface files are rejected naming the file and the key or entry") {
  struct Bad {
    std::string text;
    const char* message;
    const char* where;
  };
  const std::string t = kHand;
  const Bad cases[] = {
      {replace(t, "name: hand", "name: hand\ncurves: 1"), "unknown key 'curves' (line 3)", "expected one of: name, policies"},
      {replace(t, "      samples: 100\n      n_over_h: [1.5, 5]", "      samples: 100\n      hk: 1\n      n_over_h: [1.5, 5]"),
       "unknown key 'policies.sglang-lru[0].hk'", "(line 14)"},
      {replace(t, "[4, 0.6]", "[4, 1.5]"), "expected a number in [0, 1]", "policies.sglang-lru[0].steady[1]"},
      {replace(t, "h_over_k: 3", "h_over_k: 1"), "H/K must ascend strictly", "policies.sglang-lru[1].h_over_k"},
      {replace(t, "[2, 0.4]\n        - [4, 0.6]", "[4, 0.4]\n        - [2, 0.6]"), "n/H must ascend strictly",
       "policies.sglang-lru[0].steady[1]"},
      {replace(t, "      warmup: 0.5\n", ""), "missing required key 'policies.sglang-lru[0].warmup'", "policies.sglang-lru[0]"},
      {replace(t, "first_step: 0.9", "first_step: 2"), "expected a number in [0, 1]", "policies.sglang-lru[0].first_step"},
      {replace(t, "h_over_k: 1\n", "h_over_k: 0.5\n"), "got '0.5', expected a number in [1, ", "policies.sglang-lru[0].h_over_k"},
      {replace(t, "samples: 100", "samples: 1.5"), "got '1.5', expected an integer in [1, ", "policies.sglang-lru[0].samples"},
      {replace(t, "n_over_h: [1.5, 5]", "n_over_h: [5, 1.5]"), "1 <= min <= max", "policies.sglang-lru[0].n_over_h"},
      {replace(t, "  command:", "  cmd: x\n  command:"), "unknown key 'provenance.cmd'", "provenance"},
      {replace(t, "      layers: 1\n", "      layer: 1\n"), "unknown key 'provenance.traces[0].layer'", "provenance.traces[0]"},
      {replace(t, "initial_state: identity", "initial_state: warm"), "not an initial state", "initial_state"},
      {replace(t, "[2, 0.4]", "[2, abc]"), "expected a number", "policies.sglang-lru[0].steady[0][1]"},
  };
  for (const Bad& b : cases) {
    CAPTURE(b.text);
    const std::string path = write_yaml("surface_bad", b.text);
    CHECK_THROWS_WITH_AS(load_miss_surface(path), doctest::Contains(b.message), Error);
    CHECK_THROWS_WITH_AS(load_miss_surface(path), doctest::Contains(b.where), Error);
    CHECK_THROWS_WITH_AS(load_miss_surface(path), doctest::Contains("test_sim_surface_bad.yaml"), Error);
    std::remove(path.c_str());
  }
  CHECK_THROWS_WITH_AS(load_miss_surface("no-such-surface"),
                       doctest::Contains("miss surface 'no-such-surface' not found"), Error);
}

TEST_CASE("the shipped surfaces load with provenance; Belady stays at or below LRU; the steady state falls with H/K") {
  for (const char* name :
       {"smollm2-real", "smollm2-real-k128", "gemma3-270m-real", "gemma3-270m-field", "synthetic-dsv32"}) {
    CAPTURE(name);
    const MissSurface s = load_miss_surface(name);
    CHECK(s.name == name);
    REQUIRE(s.has_provenance);
    REQUIRE_FALSE(s.provenance.traces.empty());
    CHECK(s.provenance.command.rfind("hisparse fit-miss-model ", 0) == 0);
    REQUIRE(s.has_policy("sglang-lru"));
    REQUIRE(s.has_policy("belady"));
    const auto& lru = s.columns("sglang-lru");
    const auto& bel = s.columns("belady");
    REQUIRE(lru.size() == bel.size());
    for (size_t i = 0; i < lru.size(); ++i) {
      CAPTURE(lru[i].h_over_k);
      // The same samples feed both policies, so the bins hold the same n/H; Belady is the offline optimum.
      REQUIRE(lru[i].steady.size() == bel[i].steady.size());
      for (size_t j = 0; j < lru[i].steady.size(); ++j) {
        CHECK(lru[i].steady[j].first == bel[i].steady[j].first);
        CHECK(bel[i].steady[j].second <= lru[i].steady[j].second + 1e-6);
      }
    }
    // At a common n/H inside every column's range a larger buffer misses less.
    if (std::string(name) == "synthetic-dsv32") {
      // Its columns overlap in n/H (prompts 8K..64K, 128 steps each): n/H 4.01 lies within H/K 1, 2 and 4's
      // measured ranges (prompts 8K, 16K and 32K, from just above 4 after the first 1 + W steps).
      const int32_t K = 2048;
      double prev = 1.0;
      for (double hk : {1.0, 2.0, 4.0}) {
        const auto H = static_cast<int32_t>(hk * K);
        const int64_t n = int64_t{H} * 401 / 100;
        CHECK_FALSE(s.extrapolation("sglang-lru", H, n, K).any());
        const double f = s.fraction("sglang-lru", H, n, K);
        CHECK(f < prev);
        prev = f;
      }
    }
  }
  const MissSurface d = load_miss_surface(kDefaultMissSurface);
  CHECK(d.provenance.traces[0].path == "traces/real/smollm2_k256_sorted.hstr");
  CHECK(d.provenance.traces[0].top_k == 256);
  std::vector<double> ratios;
  for (const MissColumn& c : d.columns("sglang-lru")) ratios.push_back(c.h_over_k);
  CHECK(ratios == std::vector<double>{1, 1.25, 1.5, 2, 3, 4, 6, 8});  // scripts/fit_miss_models.sh's grid
}

TEST_CASE("the default surface by top_k: gemma3-270m-field from K 1024 on covers DSA's 16K and 32K advice") {
  // Below K 1024 the SmolLM2 surface (K 256); from 1024 on the calibrated Gemma 3 270M one (K 2048, n 16K..32K).
  CHECK(std::string(default_miss_surface(256)) == kDefaultMissSurface);
  CHECK(std::string(default_miss_surface(1023)) == kDefaultMissSurface);
  CHECK(std::string(default_miss_surface(1024)) == kDefaultLongMissSurface);
  const MissSurface g = load_miss_surface(default_miss_surface(2048));
  CHECK(g.provenance.traces[0].path == "traces/real/gemma3_270m_k2048_sorted.hstr");
  CHECK(g.provenance.traces[0].top_k == 2048);
  CHECK(g.provenance.traces[0].n_max == 32768);
  // DeepSeek-V3.2's buffer sweep (H = K x 1..8) at 16K and at 32K: every H with n > H reads measured data, n/H
  // within its column's range, so `hisparse advise` prints no extrapolation warning there.
  const int32_t K = 2048;
  for (int64_t n : {16384, 32768})
    for (double hk : {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0}) {
      const auto H = static_cast<int32_t>(hk * K);
      CAPTURE(n);
      CAPTURE(H);
      if (n > H) CHECK_FALSE(g.extrapolation("sglang-lru", H, n, K).any());
    }
}

TEST_CASE("gemma3-270m-field is gemma3-270m-real with its steady level scaled, and names the point it was fitted to") {
  const MissSurface real = load_miss_surface("gemma3-270m-real"), field = load_miss_surface("gemma3-270m-field");
  // Expected: the measured surface has no calibration; the field one carries its scale s and one field point, and
  // every steady fraction is min(1, s x measured) to the file's 6 digits, while first-step and warm-up fractions and
  // the measured n/H ranges are the measured ones (only the level of the steady state was calibrated).
  CHECK_FALSE(real.provenance.calibration.has_value());
  REQUIRE(field.provenance.calibration.has_value());
  const MissCalibration& c = *field.provenance.calibration;
  CHECK(c.steady_scale > 0);
  CHECK(c.steady_scale < 1);
  CHECK(c.fitted_to == std::vector<std::string>{"alibaba-hierarchical-sparse-dsv32-8xh200/gain_32k"});
  for (const char* policy : {"sglang-lru", "belady"}) {
    const auto& a = real.columns(policy);
    const auto& b = field.columns(policy);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(b[i].first_step == a[i].first_step);
      CHECK(b[i].warmup == a[i].warmup);
      CHECK(b[i].n_over_h_max == a[i].n_over_h_max);
      REQUIRE(b[i].steady.size() == a[i].steady.size());
      for (size_t j = 0; j < a[i].steady.size(); ++j)
        CHECK(b[i].steady[j].second == doctest::Approx(std::min(1.0, c.steady_scale * a[i].steady[j].second)).epsilon(1e-5));
    }
  }
  CHECK(field.source_label("x").rfind("calibrated (miss surface x, steady state: measured × ", 0) == 0);
  CHECK(real.source_label("x") == "fitted (miss surface x, steady state)");
}

TEST_CASE("calibrate_steady_level: scales the steady state only, caps at 1, and round-trips through the YAML") {
  MissSurface s;
  s.name = "cal";
  MissColumn col;
  col.h_over_k = 1;
  col.first_step = 0.9;
  col.first_step_samples = 1;
  col.warmup = 0.5;
  col.warmup_samples = 1;
  col.steady = {{2.0, 0.2}, {4.0, 0.8}};
  col.samples = 2;
  col.n_over_h_min = 2;
  col.n_over_h_max = 4;
  s.policies["sglang-lru"] = {col};
  s.has_provenance = true;
  s.provenance.command = "hisparse fit-miss-model test";
  s.provenance.fraction = "f";
  s.provenance.warmup_rule = "w";
  s.provenance.traces.push_back(MissTraceInfo{"t.hstr", 1, 4, InitialState::kIdentity, 1, 2, 10, 20});
  calibrate_steady_level(s, MissCalibration{1.5, {"run/point"}});
  // Expected: 0.2 x 1.5 = 0.3; 0.8 x 1.5 = 1.2, capped at 1; first step and warm-up untouched.
  const auto& c = s.columns("sglang-lru")[0];
  CHECK(c.steady[0].second == doctest::Approx(0.3));
  CHECK(c.steady[1].second == 1.0);
  CHECK(c.first_step == 0.9);
  CHECK(c.warmup == 0.5);
  const std::string path = write_yaml("surface_calibrated", miss_surface_to_yaml(s, {}));
  const MissSurface back = load_miss_surface(path);
  REQUIRE(back.provenance.calibration.has_value());
  CHECK(back.provenance.calibration->steady_scale == 1.5);
  CHECK(back.provenance.calibration->fitted_to == std::vector<std::string>{"run/point"});
  REQUIRE(back.columns("sglang-lru")[0].steady.size() == 2);
  CHECK(back.columns("sglang-lru")[0].steady[0].second == doctest::Approx(0.3));  // to the file's 6 digits
  CHECK(back.columns("sglang-lru")[0].steady[1].second == 1.0);
  std::remove(path.c_str());
  // Expected: a calibration that names no field point, or not as run/point, does not load, naming the key.
  std::string text = miss_surface_to_yaml(s, {});
  const std::string bad = text.substr(0, text.find("    fitted_to:")) + "    fitted_to: []\n";
  const std::string p1 = write_yaml("surface_cal_empty", bad);
  CHECK_THROWS_WITH_AS(load_miss_surface(p1), doctest::Contains("provenance.calibration.fitted_to"), Error);
  std::remove(p1.c_str());
  const std::string worse = text.substr(0, text.find("    fitted_to:")) + "    fitted_to: [justapoint]\n";
  const std::string p2 = write_yaml("surface_cal_noslash", worse);
  CHECK_THROWS_WITH_AS(load_miss_surface(p2), doctest::Contains("expected a field point as run/point"), Error);
  std::remove(p2.c_str());
}

TEST_CASE("miss_params_from_surface: the surface at the scenario's H/K, W = ceil(H/K) warm-up steps") {
  const std::string path = write_yaml("surface_params", kHand);
  const MissSurface surf = load_miss_surface(path);
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.hisparse.top_k = 100;
  s.deployment.hisparse.device_buffer_size = 200;  // H/K 2: halfway between the columns
  const StatisticalMissParams p = miss_params_from_surface(s, surf, "sglang-lru");
  CHECK(p.H == 200);
  CHECK(p.top_k == 100);
  CHECK(p.layers == s.model.layers);
  CHECK(p.warmup_steps == 2);
  CHECK(p.warmup_fraction == doctest::Approx(0.4));
  CHECK(p.first_step_fraction == 1.0);
  REQUIRE(p.by_ratio.size() == 3);
  // The statistical model charges exactly the surface's steady fraction after the warm-up (K − 1 = 99 per layer).
  const auto m = make_statistical_miss_model(p);
  for (int32_t n : {201, 230, 300, 500, 900, 5000}) {
    CAPTURE(n);
    double carry = 0;
    const MissResult r = m->step(MissQuery{0, 10, n, false}, carry);
    const double expected = 99.0 * p.layers * surf.fraction("sglang-lru", 200, n, 100);
    CHECK(static_cast<double>(r.misses) + carry == doctest::Approx(expected));
  }
  std::remove(path.c_str());
}

TEST_CASE("the default simulate path uses the measured surface: first step, warm-up, then the steady curve") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const int32_t H = s.deployment.hisparse.device_buffer_size, K = s.deployment.hisparse.top_k;
  const MissSurface surf = load_miss_surface(default_miss_surface(K));
  const StatisticalMissParams d = default_miss_params(s);
  CHECK(d.warmup_steps == (H + K - 1) / K);
  CHECK(d.warmup_fraction == surf.warmup_fraction("sglang-lru", H, K));
  CHECK(d.fitted_from.find("gemma3-270m-field") != std::string::npos);  // K 2048's default
  CHECK(d.fitted_from.find("steady level calibrated: measured × 0.56, fitted to alibaba-") != std::string::npos);

  // One request of 20 output tokens, n > H from the start (PD split: the buffer starts empty). The prefill gives the
  // first token, so 19 decode steps at n = 3H + 1 + step. Expected misses per step, (K − 1) × layers × f: step 0
  // f = 1 (empty buffer), steps 1..W the warm-up fraction (not capped: the buffer is still filling), later steps the
  // surface's steady fraction at that n; the carry sums them exactly.
  REQUIRE(s.deployment.pd_disaggregation);
  Workload w;
  w.name = "one";
  const int32_t output = 20, input = 3 * H;
  w.requests.push_back(RequestSpec{0, 1000, input, output});
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  const ServingResult r = run_serving(s, w, opt);  // no miss model given: the engine takes default_miss_params
  const double per_step = static_cast<double>(K - 1) * s.model.layers;
  double expected = per_step;
  for (int step = 1; step < output - 1; ++step) {
    const int64_t n = input + 1 + step;
    expected += per_step * (step <= d.warmup_steps ? d.warmup_fraction : surf.fraction("sglang-lru", H, n, K));
  }
  CHECK(std::abs(static_cast<double>(r.misses) - expected) <= 1.0);
  CHECK(r.miss_model.find("gemma3-270m-field") != std::string::npos);
  // The placeholder, when named, gives a different total: every step after the first at 0.10.
  const auto ph = make_statistical_miss_model(placeholder_miss_params(s));
  opt.miss_model = ph.get();
  const ServingResult q = run_serving(s, w, opt);
  CHECK(std::abs(static_cast<double>(q.misses) - (per_step + (output - 2) * per_step * 0.10)) <= 1.0);
  REQUIRE(std::abs(static_cast<double>(q.misses) - expected) > 10.0);
}
