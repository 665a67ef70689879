// @brief The miss surface fitted to production counters, against fractions worked out by hand from the constructed
// inputs in tests/sim/data/metrics/ (their numbers are listed here); the YAML round trip through load_miss_surface;
// vLLM #56061's counters (hits / lookups / l3_lookups per index group) and their malformed deltas.
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

namespace {


std::vector<CounterInterval> read(const std::string& text) {
  MetricsSource src;
  MetricsFitOptions o = vllm_options();
  o.model.clear();  // the constructed inputs below carry no model_name label
  return intervals_from_prometheus(parse_prometheus_text(text, "m.prom"), o, src);
}

std::string error_of(const std::string& text) {
  try {
    read(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Two scrapes of one series each: hits, and `second` (lookups, misses or l3 lookups) with the values given.
std::string two_scrapes(const std::string& second, double h0, double h1, double s0, double s1,
                        const std::string& extra = "") {
  std::string t;
  for (int k = 0; k < 2; ++k) {
    t += "vllm:hisparse_hits_total{index_group=\"0\"} " + std::to_string(k ? h1 : h0) + "\n";
    t += second + "{index_group=\"0\"} " + std::to_string(k ? s1 : s0) + "\n";
    if (!extra.empty()) t += extra + "\n";
    t += "hisparse_mean_seq_len 12288\n# EOF\n";
  }
  return t;
}

}  // namespace

TEST_CASE("vLLM #56061 counters: hit rate = hits / lookups per index group; l3 lookups reported, not fitted") {
  // Cumulative (15 s apart), group 0: hits 0, 9000, 16000; lookups 0, 10000, 20000; l3 0, 500, 1500.
  // Group 1: hits 0, 8000, 14000; lookups 0, 10000, 20000; l3 0, 1000, 2500. Mean n 12288, 12288, 28672; H 4096.
  // Intervals, each group its own point: miss fractions (lookups − hits) / lookups = 0.1 (g0), 0.2 (g1) at
  // n/H 3, then 0.3 (g0), 0.4 (g1) at n/H (12288 + 28672) / 2 / 4096 = 5.
  const MetricsFit fit =
      fit_from_metric_files({data("vllm_index_groups.prom")}, vllm_options());
  REQUIRE(fit.intervals.size() == 4);
  const char* groups[] = {"0", "1", "0", "1"};
  const double fraction[] = {0.1, 0.2, 0.3, 0.4}, ratio[] = {3, 3, 5, 5}, l3[] = {500, 1000, 1000, 1500};
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const FittedInterval& f = fit.intervals[i];
    CHECK(f.skipped.empty());
    CHECK(f.iv.index_group == groups[i]);
    CHECK(f.iv.lookups.value() == 10000);
    CHECK(f.iv.l3_lookups.value() == l3[i]);
    CHECK(f.fraction == doctest::Approx(fraction[i]));
    CHECK(f.n_over_h == doctest::Approx(ratio[i]));
  }
  // One H/K column; bin [3,4) pools 3000 misses of 20000 lookups, bin [4,6) 7000 of 20000.
  const auto& c = fit.surface.policies.at("sglang-lru").at(0);
  REQUIRE(c.steady.size() == 2);
  CHECK(c.steady[0].second == doctest::Approx(0.15));
  CHECK(c.steady[1].second == doctest::Approx(0.35));
  CHECK(c.warmup == doctest::Approx(0.25));
  // The table names the group and the l3 share; the JSON carries both.
  const std::string table = metrics_fit_table(fit);
  CHECK(table.find(" g1 ") != std::string::npos);
  CHECK(table.find("l3 lookups 1500 of 10000 lookups") != std::string::npos);
  CHECK(metrics_fit_json(fit).find("\"index_group\": \"1\", \"lookups\": 10000, \"l3_lookups\": 1500") !=
        std::string::npos);
}

TEST_CASE("vLLM #56061 counters: malformed deltas and mixed schemes are refused with file, lines and group") {
  // Lookups fell behind hits: the rate would exceed 1.
  CHECK(error_of(two_scrapes("vllm:hisparse_lookups_total", 0, 900, 0, 800))
            .find("m.prom:1..5: vllm:hisparse_hits_total grew by 900 and vllm:hisparse_lookups_total by only 800 "
                  "(index_group \"0\"): expected lookups >= hits") != std::string::npos);
  // More l3 lookups than lookups.
  const std::string l3 = two_scrapes("vllm:hisparse_lookups_total", 0, 900, 0, 1000);
  std::string bad_l3;
  int k = 0;
  for (size_t p = 0, q; (q = l3.find("# EOF\n", p)) != std::string::npos; p = q + 6, ++k)
    bad_l3 += l3.substr(p, q - p) + "vllm:hisparse_l3_lookups_total{index_group=\"0\"} " + (k ? "2000" : "0") +
              "\n# EOF\n";
  CHECK(error_of(bad_l3).find("expected l3 lookups <= lookups") != std::string::npos);
  // Misses and lookups both: one would be counted twice.
  CHECK(error_of(two_scrapes("vllm:hisparse_lookups_total", 0, 900, 0, 1000, "vllm:hisparse_cache_misses_total 5"))
            .find("expected one of them (misses = lookups − hits)") != std::string::npos);
  // Both hit names: cache_hits (the later exposition) and hits (#56061).
  CHECK(error_of(two_scrapes("vllm:hisparse_lookups_total", 0, 900, 0, 1000, "vllm:hisparse_cache_hits_total 5"))
            .find("expected one name per counter") != std::string::npos);
  // Lookups without hits: no rate at all.
  CHECK(error_of("vllm:hisparse_lookups_total 1\n# EOF\nvllm:hisparse_lookups_total 2\n").find("no HiSparse counters") !=
        std::string::npos);
  // A well-formed pair reads: 100 misses of 1000 lookups.
  const auto ivs = read(two_scrapes("vllm:hisparse_lookups_total", 0, 900, 0, 1000));
  REQUIRE(ivs.size() == 1);
  CHECK(ivs[0].misses == 100);
}
