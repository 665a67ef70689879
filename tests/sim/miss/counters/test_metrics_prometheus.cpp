// @brief The Prometheus text reader and the SGLang log reader: the grammar, scrape splitting, strict errors with
// file:line, and fuzz-style robustness (every truncation and seeded byte mutations of the shipped inputs may only
// parse or throw hisparse::Error).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "sim/miss/counters/metrics_fit.h"
#include "sim/miss/counters/prometheus_text.h"
#include "sim/miss/counters/sglang_log.h"

using namespace hisparse;
using namespace hisparse::sim::counters;

namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/metrics/" + name, std::ios::binary);
  REQUIRE(in);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string error_of(const std::string& text) {
  try {
    parse_prometheus_text(text, "m.prom");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Parsing, interval extraction and the fit on arbitrary bytes: only hisparse::Error may come out.
void must_parse_or_fail_cleanly(const std::string& text) {
  MetricsFitOptions o;
  o.H = 4096;
  o.K = 2048;
  try {
    if (looks_like_sglang_log(text)) {
      MetricsSource src;
      o.seq_len = 20000;
      auto ivs = intervals_from_log(parse_sglang_log(text, "f"), src);
      fit_from_intervals(ivs, {src}, o);
    } else {
      o.seq_len_metric = "hisparse_mean_seq_len";
      o.row_bytes = 656;
      MetricsSource src;
      auto ivs = intervals_from_prometheus(parse_prometheus_text(text, "f"), o, src);
      fit_from_intervals(ivs, {src}, o);
    }
  } catch (const Error&) {
  }
}

}  // namespace

TEST_CASE("prometheus: samples, labels with escapes, timestamps, special values, types") {
  const std::string text =
      "# HELP c_total a counter\n# TYPE c counter\n"
      "c_total{b=\"x\\\"y\",a=\"1\\\\2\\n\",} 3.5e2 1700000000123\r\n"
      "  g   -Inf\n"
      "h{le=\"+Inf\"} NaN\n"
      "# just a comment\n\n"
      "u +Inf 5\n";
  const PromDocument doc = parse_prometheus_text(text, "m.prom");
  REQUIRE(doc.scrapes.size() == 1);
  const auto& s = doc.scrapes[0].samples;
  REQUIRE(s.size() == 4);
  CHECK(s[0].name == "c_total");
  CHECK(s[0].labels == Labels{{"a", "1\\2\n"}, {"b", "x\"y"}});  // sorted by name, escapes decoded
  CHECK(s[0].value == 350);
  CHECK(*s[0].timestamp_ms == 1700000000123);
  CHECK(s[0].line == 3);
  CHECK(std::isinf(s[1].value));
  CHECK(s[1].value < 0);
  CHECK(std::isnan(s[2].value));
  CHECK(doc.types.at("c") == "counter");
  CHECK(*doc.scrapes[0].timestamp_ms == 1700000000123);
}

TEST_CASE("prometheus: concatenated scrapes split at a repeated series and at # EOF") {
  const std::string text = "a 1\nb{x=\"1\"} 2\nb{x=\"2\"} 2\na 2\nb{x=\"1\"} 3\n# EOF\nb{x=\"2\"} 9\n";
  const PromDocument doc = parse_prometheus_text(text, "m.prom");
  REQUIRE(doc.scrapes.size() == 3);
  CHECK(doc.scrapes[0].samples.size() == 3);
  CHECK(doc.scrapes[1].first_line == 4);
  CHECK(doc.scrapes[1].samples.size() == 2);
  CHECK(doc.scrapes[2].samples.size() == 1);
  CHECK(doc.scrapes[1].find("b", Labels{{"x", "1"}})->value == 3);
  CHECK(doc.scrapes[1].find("b", Labels{{"x", "2"}}) == nullptr);
}

TEST_CASE("prometheus: malformed lines are errors naming file, line and what was expected") {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"1abc 2\n", "m.prom:1: column 1: expected a metric name"},
      {"a{b=1} 2\n", "m.prom:1: column 5: expected '\"' opening a label value"},
      {"a{b=\"1} 2\n", "expected '\"' closing the label value"},
      {"a{b=\"\\t\"} 2\n", "expected an escape"},
      {"a{b=\"1\" c=\"2\"} 2\n", "expected ',' or '}' after a label value"},
      {"a{b=\"1\",b=\"2\"} 2\n", "label b given twice"},
      {"a{9=\"1\"} 2\n", "expected a label name"},
      {"a{b} 2\n", "expected '=' after label b"},
      {"x 0x1p3\n", "expected a float value"},
      {"x inf\n", "expected a float value"},
      {"x\n", "expected a sample value after x"},
      {"x 1 2.5\n", "expected an integer timestamp"},
      {"x 1 2 3\n", "expected the end of the line after the timestamp"},
      {"ok 1\n# TYPE y histogramm\n", "m.prom:2: TYPE y: expected one of counter"},
      {"# TYPE y gauge\n# TYPE y counter\n", "contradicts the earlier TYPE gauge"},
      {"y 1\n# TYPE y counter\n", "TYPE y comes after samples of y"},
      {"# TYPE c counter\nc_total -1\n", "counter c_total has value -1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(error_of(c.text).find(c.expected) != std::string::npos);
  }
  CHECK(error_of(std::string("a 1\nb\0 2\n", 9)).find("m.prom:2: NUL byte") != std::string::npos);
  CHECK(error_of(std::string(kMaxPromLineBytes + 1, 'a')).find("longer than") != std::string::npos);
}

TEST_CASE("sglang log: stats and decode lines, strict on those, blind to the rest") {
  const std::vector<LogInterval> lines = parse_sglang_log(data("sglang_hisparse.log"), "s.log");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].hits == 45000);
  CHECK(lines[0].misses == 5000);
  CHECK(*lines[0].h2d_bytes == 3280000);
  CHECK(*lines[0].seq_len == 12288);  // 98304 / 8 from the two decode lines before it
  CHECK(lines[0].decode_lines == 2);
  CHECK(*lines[0].H == 4096);
  CHECK(*lines[0].K == 2048);
  CHECK(*lines[1].seq_len == 16384);
  CHECK(*lines[2].seq_len == 40960);  // given on the line itself
  CHECK(lines[2].decode_lines == 0);
  CHECK(*lines[2].time_s - *lines[0].time_s == 20);

  // The same log with Windows line ends (a log copied off another machine) reads the same, line numbers included.
  std::string crlf;
  for (char c : data("sglang_hisparse.log")) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::vector<LogInterval> again = parse_sglang_log(crlf, "s.log");
  REQUIRE(again.size() == lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    CHECK(again[i].line == lines[i].line);
    CHECK(again[i].misses == lines[i].misses);
    CHECK(*again[i].K == *lines[i].K);
    CHECK(*again[i].seq_len == *lines[i].seq_len);
  }

  auto err = [](const std::string& text) {
    try {
      parse_sglang_log(text, "s.log");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err("x\nHiSparse swap-in: hits=1\n").find("s.log:2: a HiSparse swap-in line needs hits= and misses=") == 0);
  CHECK(err("HiSparse swap-in: hits=1 misses=-2\n").find("misses=-2: expected a non-negative integer") !=
        std::string::npos);
  CHECK(err("HiSparse swap-in: hits=1 misses=2 colour=red\n").find("unknown field 'colour'") != std::string::npos);
  CHECK(err("HiSparse swap-in: hits=1 hits=2 misses=2\n").find("hits given twice") != std::string::npos);
  CHECK(err("HiSparse swap-in: hits=1 misses=2 top_k=0\n").find("top_k=0 out of range") != std::string::npos);
  CHECK(err("HiSparse swap-in: hits=1, misses\n").find("expected key=value") != std::string::npos);
  CHECK(err("Decode batch. #running-req: x\n").find("'#running-req:' without a number") != std::string::npos);
  CHECK(err("unrelated line\nanother\n").empty());
}

TEST_CASE("fuzz-style: every truncation and seeded mutations of the shipped inputs parse or fail cleanly") {
  for (const char* name : {"vllm_two_engines.prom", "sglang_hisparse.log", "bytes_only.prom"}) {
    const std::string text = data(name);
    CAPTURE(name);
    // Every prefix near the start (where the headers are), then a stride through the rest.
    for (size_t n = 0; n <= text.size(); n += n < 600 ? 1 : 37) must_parse_or_fail_cleanly(text.substr(0, n));
    std::mt19937 rng(19);
    const std::string hostile = "{}\"\\=,# \n\r\t\0-+.eE9xNaInf";
    for (int i = 0; i < 1500; ++i) {
      std::string t = text;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const size_t at = rng() % t.size();
        switch (rng() % 3) {
          case 0:
            t[at] = hostile[rng() % hostile.size()];
            break;
          case 1:
            t.erase(at, 1 + rng() % 8);
            break;
          default:
            t.insert(at, std::string(1 + rng() % 3, hostile[rng() % hostile.size()]));
        }
        if (t.empty()) t = "x";
      }
      must_parse_or_fail_cleanly(t);
    }
  }
}
