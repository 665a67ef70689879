// @brief vLLM #56061's HiSparse counters (vllm:hisparse_hits, _lookups, _l3_lookups) read by `calibrate
// --from-metrics`: hit rate = hits / lookups per index group, against fractions worked out by hand from
// tests/sim/data/metrics/vllm_index_groups.prom, and the malformed inputs that must be refused with file and lines.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "sim/miss/counters/metrics_fit.h"
#include "sim/miss/counters/prometheus_text.h"

using namespace hisparse;
using namespace hisparse::sim::counters;

namespace {

MetricsFitOptions options() {
  MetricsFitOptions o;
  o.H = 4096;
  o.K = 2048;
  o.seq_len_metric = "hisparse_mean_seq_len";
  o.model = "dsv32";
  return o;
}

std::vector<CounterInterval> read(const std::string& text) {
  MetricsSource src;
  MetricsFitOptions o = options();
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
      fit_from_metric_files({std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/metrics/vllm_index_groups.prom"},
                            options());
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
