// @brief The miss surface fitted to production counters, against fractions worked out by hand from the constructed
// inputs in tests/sim/data/metrics/ (their numbers are listed here); the YAML round trip through load_miss_surface.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "sim/miss/counters/metrics_fit.h"
#include "core/io/output_file.h"

using namespace hisparse;
using namespace hisparse::sim;
using namespace hisparse::sim::counters;

namespace {

std::string data(const std::string& name) {
  return std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/metrics/" + name;
}

MetricsFitOptions vllm_options() {
  MetricsFitOptions o;
  o.H = 4096;
  o.K = 2048;
  o.seq_len_metric = "hisparse_mean_seq_len";
  o.model = "dsv32";
  o.row_bytes = 656;
  return o;
}

}  // namespace

TEST_CASE("vLLM counters: per-series deltas (a restarted engine), model filter, n/H bins of the MissFitter") {
  // Cumulative per scrape (15 s apart): engine 0 hits 100000,109000,117000,124000,130000, misses
  // 20000,21000,23000,26000,30000; engine 1 hits 50000,59000,67000,7000 (restart),13000, misses
  // 5000,6000,8000,3000,7000; mean n gauge 12288,12288,12288,28672,28672; H 4096, K 2048.
  // Interval deltas (both engines): misses/lookups 2000/20000, 4000/20000, 6000/20000 (engine 1 counted since its
  // restart), 8000/20000 at mean n/H (12288+12288)/2/4096 = 3, 3, (12288+28672)/2/4096 = 5, 7.
  const MetricsFit fit = fit_from_metric_files({data("vllm_two_engines.prom")}, vllm_options());
  REQUIRE(fit.sources.size() == 1);
  CHECK(fit.sources[0].scrapes == 5);
  CHECK(fit.sources[0].intervals == 4);
  CHECK(*fit.sources[0].t_last_s - *fit.sources[0].t_first_s == doctest::Approx(60));
  REQUIRE(fit.intervals.size() == 4);
  const double expected_fraction[] = {0.1, 0.2, 0.3, 0.4};
  const double expected_ratio[] = {3, 3, 5, 7};
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(fit.intervals[i].skipped.empty());
    CHECK(fit.intervals[i].fraction == doctest::Approx(expected_fraction[i]));
    CHECK(fit.intervals[i].n_over_h == doctest::Approx(expected_ratio[i]));
    CHECK(fit.intervals[i].bytes_per_miss == doctest::Approx(656));
    CHECK(fit.intervals[i].iv.counter_reset == (i == 2));
  }
  const auto& cols = fit.surface.policies.at("sglang-lru");
  REQUIRE(cols.size() == 1);
  CHECK(cols[0].h_over_k == 2);
  // Bins [3,4) pools intervals 1-2: 6000/40000; [4,6): 0.3 at 5; [6,8): 0.4 at 7.
  REQUIRE(cols[0].steady.size() == 3);
  CHECK(cols[0].steady[0].first == doctest::Approx(3));
  CHECK(cols[0].steady[0].second == doctest::Approx(0.15));
  CHECK(cols[0].steady[1].second == doctest::Approx(0.3));
  CHECK(cols[0].steady[2].first == doctest::Approx(7));
  CHECK(cols[0].warmup == doctest::Approx(20000.0 / 80000.0));  // pooled
  CHECK(cols[0].first_step == 1.0);                              // the contract value, not measured
  CHECK(cols[0].samples == 80000);
  CHECK(cols[0].n_over_h_min == doctest::Approx(3));
  CHECK(cols[0].n_over_h_max == doctest::Approx(7));

  // Without the model filter the other model's 1e6 hits per interval (and no misses) join the sums.
  MetricsFitOptions all = vllm_options();
  all.model.clear();
  const MetricsFit pooled = fit_from_metric_files({data("vllm_two_engines.prom")}, all);
  CHECK(pooled.intervals[0].fraction == doctest::Approx(2000.0 / 1020000.0));
}

TEST_CASE("SGLang log: per-line deltas, n from decode lines or the stats line, H and K from its fields") {
  MetricsFitOptions o;  // everything from the log itself
  const MetricsFit fit = fit_from_metric_files({data("sglang_hisparse.log")}, o);
  REQUIRE(fit.intervals.size() == 3);
  CHECK(fit.sources[0].kind == "sglang-log");
  CHECK(*fit.sources[0].t_last_s - *fit.sources[0].t_first_s == 20);
  const auto& c = fit.surface.policies.at("sglang-lru").at(0);
  CHECK(c.h_over_k == 2);
  REQUIRE(c.steady.size() == 3);  // n/H 3 (bin [3,4)), 4 ([4,6)), 10 ([8,12))
  CHECK(c.steady[0] == std::pair<double, double>{3, 0.1});
  CHECK(c.steady[1] == std::pair<double, double>{4, 0.25});
  CHECK(c.steady[2] == std::pair<double, double>{10, 0.5});
  CHECK(c.warmup == doctest::Approx(35000.0 / 130000.0));
  CHECK(fit.intervals[0].bytes_per_miss == doctest::Approx(656));
}

TEST_CASE("bytes only: misses = H2D bytes / row bytes; without --row-bytes it is an error") {
  MetricsFitOptions o;
  o.H = 4096;
  o.K = 1024;
  o.seq_len = 20000;
  o.row_bytes = 1024;
  const MetricsFit fit = fit_from_metric_files({data("bytes_only.prom")}, o);
  REQUIRE(fit.intervals.size() == 2);
  CHECK(fit.intervals[0].iv.misses == 10000);
  CHECK(fit.intervals[1].fraction == doctest::Approx(0.25));
  CHECK(fit.surface.policies.at("sglang-lru")[0].h_over_k == 4);
  o.row_bytes.reset();
  CHECK_THROWS_WITH_AS(fit_from_metric_files({data("bytes_only.prom")}, o),
                       doctest::Contains("--row-bytes is needed"), Error);
}

TEST_CASE("labels give H and K per series; unusable intervals say why; no usable interval is an error") {
  const std::string text =
      "m_total{device_buffer_size=\"4096\",top_k=\"2048\"} 0\nx_total{device_buffer_size=\"4096\",top_k=\"2048\"} 0\n"
      "m_total{device_buffer_size=\"8192\",top_k=\"2048\"} 0\nx_total{device_buffer_size=\"8192\",top_k=\"2048\"} 0\n"
      "m_total{device_buffer_size=\"4096\",top_k=\"2048\"} 10\nx_total{device_buffer_size=\"4096\",top_k=\"2048\"} 90\n"
      "m_total{device_buffer_size=\"8192\",top_k=\"2048\"} 5\nx_total{device_buffer_size=\"8192\",top_k=\"2048\"} 95\n";
  std::string t = text;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"m_total", "hisparse_cache_misses_total"},
                                 {"x_total", "hisparse_cache_hits_total"}}) {
    for (size_t p = t.find(from); p != std::string::npos; p = t.find(from, p + to.size())) t.replace(p, from.size(), to);
  }
  MetricsFitOptions o;
  o.seq_len = 40960;
  MetricsSource src;
  const auto ivs = intervals_from_prometheus(parse_prometheus_text(t, "l.prom"), o, src);
  REQUIRE(ivs.size() == 2);
  const MetricsFit fit = fit_from_intervals(ivs, {src}, o);
  const auto& cols = fit.surface.policies.at("sglang-lru");
  REQUIRE(cols.size() == 2);  // H/K 2 and 4
  CHECK(cols[0].steady[0].second == doctest::Approx(0.1));
  CHECK(cols[1].h_over_k == 4);
  CHECK(cols[1].steady[0] == std::pair<double, double>{5, 0.05});

  MetricsFitOptions fast = o;
  fast.seq_len = 4000;  // n <= H: the fast path
  const auto none = [&] { fit_from_intervals(ivs, {src}, fast); };
  CHECK_THROWS_WITH_AS(none(), doctest::Contains("no usable interval among 2 (first: l.prom:5: mean n 4000 <= H 4096"),
                       Error);
  MetricsFitOptions unknown;
  CHECK_THROWS_WITH_AS(fit_from_intervals(ivs, {src}, unknown), doctest::Contains("mean context unknown"), Error);
}

TEST_CASE("the YAML reads back through load_miss_surface and the planner's fraction follows the points") {
  const MetricsFit fit = fit_from_metric_files({data("vllm_two_engines.prom")}, vllm_options());
  const auto dir = std::filesystem::temp_directory_path() / ("metrics_fit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "prod.yaml").string();
  write_file_atomically(path, metrics_fit_yaml(fit, "hisparse calibrate --from-metrics x"));
  const MissSurface s = load_miss_surface(path);
  CHECK(s.name == "production");
  // At H/K 2, n/H 5 the planner reads the fitted point (below the steady bound (n - H) / (K - 1) = 1).
  CHECK(s.fraction("sglang-lru", 4096, 5 * 4096, 2048) == doctest::Approx(0.3).epsilon(1e-5));
  CHECK(s.fraction("sglang-lru", 4096, 4 * 4096, 2048) == doctest::Approx(0.225).epsilon(1e-5));  // interpolated
  const std::string yaml = metrics_fit_yaml(fit, "cmd");
  CHECK(yaml.find("Not identified:") != std::string::npos);
  CHECK(yaml.find("5 scrapes/lines, 4 intervals, time span 60 s") != std::string::npos);
  const std::string json = metrics_fit_json(fit);
  CHECK(json.find("\"counter_reset\": true") != std::string::npos);
  CHECK(json.find("\"not_identified\": [") != std::string::npos);
  std::filesystem::remove_all(dir);
}
