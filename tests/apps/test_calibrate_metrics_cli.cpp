// @brief `hisparse calibrate --from-metrics` end to end on the shipped, constructed inputs
// (tests/sim/data/metrics/): the surface it writes loads and holds the fractions worked out by hand from the
// inputs' counters; the JSON and the table carry the same; malformed input fails naming file and line and writes
// nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/miss/miss_surface.h"
#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using namespace hisparse;

namespace {
std::string data(const std::string& name) {
  return std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/metrics/" + name;
}
}  // namespace

TEST_CASE("calibrate --from-metrics: vLLM scrapes and an SGLang log to one loadable surface") {
  const fs::path dir = test::scratch_dir("calibrate_metrics");
  const std::string yaml = (dir / "prod.yaml").string(), json = (dir / "prod.json").string();
  // Hand-derived (see tests/sim/miss/counters/test_metrics_fit.cpp for the counters): vLLM at H/K 2 gives 0.15 at n/H 3,
  // 0.3 at 5, 0.4 at 7; the log (also H/K 2) gives 0.1 at 3, 0.25 at 4, 0.5 at 10. Pooled in the same n/H bins:
  // [3,4): (6000 + 5000) / (40000 + 50000); [4,6): (6000 + 10000) / (20000 + 40000) at n/H (5*20000 + 4*40000)/60000.
  const test::Run r = test::run("calibrate --from-metrics " + data("vllm_two_engines.prom") + " " +
                                    data("sglang_hisparse.log") +
                                    " --device-buffer-size 4096 --top-k 2048 --seq-len-metric hisparse_mean_seq_len"
                                    " --model dsv32 --name prod --out " + yaml + " --json " + json,
                                dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("vllm_two_engines.prom (prometheus): 5 scrapes/lines, 4 intervals, time span 60 s") !=
        std::string::npos);
  CHECK(r.out.find("sglang_hisparse.log (sglang-log): 3 scrapes/lines, 3 intervals, time span 20 s") !=
        std::string::npos);
  CHECK(r.out.find("yes (counter reset)") != std::string::npos);
  CHECK(r.out.find("not identified by counters:") != std::string::npos);

  const sim::MissSurface s = sim::load_miss_surface(yaml);
  const auto& c = s.columns("sglang-lru");
  REQUIRE(c.size() == 1);
  CHECK(c[0].h_over_k == 2);
  REQUIRE(c[0].steady.size() == 4);  // bins [3,4), [4,6), [6,8), [8,12): n/H 3, 4.33, 7, 10
  CHECK(c[0].steady[0].first == doctest::Approx(3));
  CHECK(c[0].steady[0].second == doctest::Approx(11000.0 / 90000.0).epsilon(1e-5));
  CHECK(c[0].steady[1].first == doctest::Approx((5.0 * 20000 + 4.0 * 40000) / 60000).epsilon(1e-4));
  CHECK(c[0].steady[1].second == doctest::Approx(16000.0 / 60000.0).epsilon(1e-5));
  CHECK(c[0].steady[2].second == doctest::Approx(0.4).epsilon(1e-5));
  CHECK(c[0].steady[3].second == doctest::Approx(0.5).epsilon(1e-5));
  CHECK(c[0].warmup == doctest::Approx((20000.0 + 35000.0) / (80000.0 + 130000.0)).epsilon(1e-5));
  const std::string text = test::slurp(yaml);
  CHECK(text.find("calibrated from production swap-in counters") != std::string::npos);
  CHECK(text.find("Written by: hisparse calibrate --from-metrics") != std::string::npos);
  CHECK(test::slurp(json).find("\"scrapes\": 5") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("calibrate --from-metrics: malformed or insufficient input fails by name and writes nothing") {
  const fs::path dir = test::scratch_dir("calibrate_metrics_bad");
  const std::string out = (dir / "x.yaml").string();
  {
    std::ofstream(dir / "bad.prom") << "# TYPE vllm:hisparse_cache_hits counter\n"
                                       "vllm:hisparse_cache_hits_total{model_name=\"a} 3\n";
  }
  test::Run r = test::run("calibrate --from-metrics " + (dir / "bad.prom").string() +
                              " --device-buffer-size 4096 --top-k 2048 --seq-len 9000 --out " + out,
                          dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("bad.prom:2: column") != std::string::npos);
  CHECK(r.err.find("closing the label value") != std::string::npos);
  CHECK(!fs::exists(out));

  { std::ofstream(dir / "one.prom") << "vllm:hisparse_cache_hits_total 5\nvllm:hisparse_cache_misses_total 1\n"; }
  r = test::run("calibrate --from-metrics " + (dir / "one.prom").string() + " --device-buffer-size 4096 --top-k 2048"
                " --seq-len 9000 --out " + out, dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("1 scrape(s) with HiSparse counters; counters need at least 2") != std::string::npos);

  r = test::run("calibrate --from-metrics " + data("bytes_only.prom") + " --top-k 0", dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("--top-k 0 (expected 1..") != std::string::npos);
  r = test::run("calibrate --from-metrics " + (dir / "missing.prom").string(), dir);
  CHECK(r.err.find("missing.prom: cannot open for reading") != std::string::npos);
  r = test::run("calibrate --from-metrics " + data("bytes_only.prom") + " --out x.yml", dir);
  CHECK(r.err.find("must end in .yaml") != std::string::npos);
  CHECK(!fs::exists(out));
  fs::remove_all(dir);
}
