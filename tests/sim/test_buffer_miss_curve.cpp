// @brief Measured miss curve (scenarios/miss_models): loading, shape, interpolation, and use as the default model.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/buffer_miss_curve.h"
#include "sim/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::string write_yaml(const std::string& stem, const std::string& text) {
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_sim_" + stem + ".yaml";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("the shipped curve loads: both policies at the fitted H/K points") {
  const BufferMissCurve c = load_buffer_miss_curve(kDefaultMissCurve);
  CHECK(c.name == "smollm2-real");
  CHECK(c.top_k == 256);
  REQUIRE(c.curves.count("sglang-lru") == 1);
  REQUIRE(c.curves.count("belady") == 1);
  const std::vector<double> ratios = {1, 1.25, 1.5, 2, 3, 4, 6, 8};  // the grid scripts/fit_miss_model.py replays
  for (const auto& [policy, curve] : c.curves) {
    CAPTURE(policy);
    REQUIRE(curve.size() == ratios.size());
    for (size_t i = 0; i < ratios.size(); ++i) CHECK(curve[i].first == ratios[i]);
  }
  CHECK(c.reference.count("sglang-lru-k128") == 1);
}

TEST_CASE("the shipped curves fall with H/K, and Belady stays at or below LRU") {
  const BufferMissCurve c = load_buffer_miss_curve(kDefaultMissCurve);
  auto check_falls = [](const std::string& name, const RatioCurve& v) {
    CAPTURE(name);
    for (size_t i = 1; i < v.size(); ++i) CHECK(v[i].second <= v[i - 1].second);
    // A buffer of 8 K must leave far fewer misses than one of K (a flat curve would mean a broken fit).
    CHECK(v.back().second < 0.25 * v.front().second);
  };
  for (const auto& [name, v] : c.curves) check_falls(name, v);
  for (const auto& [name, v] : c.reference) check_falls(name, v);
  // Belady is the offline optimum: the ceiling of any online policy at the same H.
  const RatioCurve& lru = c.curves.at("sglang-lru");
  const RatioCurve& bel = c.curves.at("belady");
  for (size_t i = 0; i < lru.size(); ++i) CHECK(bel[i].second <= lru[i].second);
  // Between grid points the interpolated value stays within its neighbours, so monotone there too.
  double prev = 1.0;
  for (double r = 1.0; r <= 10.0; r += 0.125) {
    const double f = c.fraction("sglang-lru", r);
    CHECK(f <= prev);
    prev = f;
  }
}

TEST_CASE("interpolation is linear in H/K between points and flat beyond both ends") {
  const std::string path = write_yaml("curve_interp",
                                      "name: hand\ntop_k: 64\n"
                                      "curves:\n  sglang-lru: [[1, 0.30], [2, 0.10], [4, 0.05]]\n"
                                      "  belady: [[1, 0.2], [4, 0.02]]\n");
  const BufferMissCurve c = load_buffer_miss_curve(path);
  CHECK(c.name == "hand");
  CHECK(c.top_k == 64);
  CHECK(c.reference.empty());
  // Expected: points exact; 1.5 → (0.30 + 0.10) / 2 = 0.20; 3 → (0.10 + 0.05) / 2 = 0.075;
  // 1.25 → 0.30 − 0.25 × 0.20 = 0.25; beyond 4 → 0.05; at 1 → 0.30; belady 2.5 → 0.2 − 0.5 × 0.18 = 0.11.
  CHECK(c.fraction("sglang-lru", 1.0) == doctest::Approx(0.30));
  CHECK(c.fraction("sglang-lru", 2.0) == doctest::Approx(0.10));
  CHECK(c.fraction("sglang-lru", 1.5) == doctest::Approx(0.20));
  CHECK(c.fraction("sglang-lru", 1.25) == doctest::Approx(0.25));
  CHECK(c.fraction("sglang-lru", 3.0) == doctest::Approx(0.075));
  CHECK(c.fraction("sglang-lru", 4.0) == doctest::Approx(0.05));
  CHECK(c.fraction("sglang-lru", 16.0) == doctest::Approx(0.05));
  CHECK(c.fraction("belady", 2.5) == doctest::Approx(0.11));
  CHECK_THROWS_WITH_AS(c.fraction("fifo", 2.0), doctest::Contains("no curve for policy 'fifo'"), Error);

  // A scenario's parameters take the fraction at its own H/K: 4096 / 2048 = 2 → 0.10; 6144 / 2048 = 3 → 0.075.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.hisparse.top_k = 2048;
  s.deployment.hisparse.device_buffer_size = 4096;
  StatisticalMissParams p = miss_params_from_curve(s, c, "sglang-lru");
  REQUIRE(p.by_ratio.size() == 1);
  CHECK(p.by_ratio[0].second == doctest::Approx(0.10));
  CHECK(p.H == 4096);
  CHECK(p.top_k == 2048);
  CHECK(p.layers == s.model.layers);
  s.deployment.hisparse.device_buffer_size = 6144;
  p = miss_params_from_curve(s, c, "sglang-lru");
  CHECK(p.by_ratio[0].second == doctest::Approx(0.075));
  std::remove(path.c_str());
}

TEST_CASE("bad curve files are rejected naming file and entry") {
  struct Bad {
    const char* text;
    const char* message;
  };
  const Bad cases[] = {
      {"name: x\ntop_k: 8\ncurves:\n  lru: [[2, 0.1], [1, 0.2]]\n", "must ascend"},
      {"name: x\ntop_k: 8\ncurves:\n  lru: [[1, 1.5]]\n", "must be in [0, 1]"},
      {"name: x\ntop_k: 8\ncurves:\n  lru: [[0.5, 0.1]]\n", "must be >= 1"},
      {"name: x\ntop_k: 8\ncurves:\n  lru: [[1, 0.1, 3]]\n", "expected [H/K, fraction]"},
      {"name: x\ntop_k: 8\ncurves:\n  lru: []\n", "non-empty list"},
      {"name: x\ntop_k: 8\ncurves:\n  lru: [[1, abc]]\n", "expected a number"},
      {"name: x\ntop_k: 8.5\ncurves:\n  lru: [[1, 0.1]]\n", "top_k"},
      {"name: x\ncurves:\n  lru: [[1, 0.1]]\n", "'top_k' is required"},
      {"name: x\ntop_k: 8\ncurve:\n  lru: [[1, 0.1]]\n", "unknown key 'curve'"},
  };
  for (const Bad& b : cases) {
    CAPTURE(b.text);
    const std::string path = write_yaml("curve_bad", b.text);
    CHECK_THROWS_WITH_AS(load_buffer_miss_curve(path), doctest::Contains(b.message), Error);
    CHECK_THROWS_WITH_AS(load_buffer_miss_curve(path), doctest::Contains("test_sim_curve_bad.yaml"), Error);
    std::remove(path.c_str());
  }
  CHECK_THROWS_WITH_AS(load_buffer_miss_curve("no-such-curve"), doctest::Contains("miss curve 'no-such-curve' not found"),
                       Error);
}

TEST_CASE("the default simulate path uses the measured curve at the deployment's H/K, not the placeholder") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const BufferMissCurve c = load_buffer_miss_curve(kDefaultMissCurve);
  const double h_over_k = static_cast<double>(s.deployment.hisparse.device_buffer_size) / s.deployment.hisparse.top_k;
  const double f = c.fraction("sglang-lru", h_over_k);
  const StatisticalMissParams d = default_miss_params(s);
  REQUIRE(d.by_ratio.size() == 1);
  CHECK(d.by_ratio[0].second == f);
  CHECK(d.fitted_from.find("smollm2-real") != std::string::npos);
  CHECK(placeholder_miss_params(s).by_ratio[0].second == 0.10);
  REQUIRE(std::abs(f - 0.10) > 1e-3);  // else the comparison below could not tell them apart

  // One request of 20 output tokens, n > H from the start (PD split: the buffer starts empty). The prefill
  // gives the first token, so 19 decode steps. Expected misses: step 0 loads every non-newest selection,
  // (K − 1) × layers; each of the 18 later steps (K − 1) × layers × f, summed exactly by the carry.
  Workload w;
  w.name = "one";
  const int32_t output = 20, later_steps = output - 2;
  w.requests.push_back(RequestSpec{0, 1000, 3 * s.deployment.hisparse.device_buffer_size, output});
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  const ServingResult r = run_serving(s, w, opt);  // no miss model given: the engine takes default_miss_params
  const double per_step = static_cast<double>(s.deployment.hisparse.top_k - 1) * s.model.layers;
  const double expected = per_step + later_steps * per_step * f;
  CHECK(std::abs(static_cast<double>(r.misses) - expected) <= 1.0);
  CHECK(r.miss_model.find("smollm2-real") != std::string::npos);
  // The placeholder, when named, gives a different total.
  const auto ph = make_statistical_miss_model(placeholder_miss_params(s));
  opt.miss_model = ph.get();
  const ServingResult q = run_serving(s, w, opt);
  CHECK(std::abs(static_cast<double>(q.misses) - (per_step + later_steps * per_step * 0.10)) <= 1.0);
}
