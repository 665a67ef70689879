// @brief The field-file loader (sim/fidelity/field_set.h) reads the fixtures as written and rejects, naming file, key
// and line, an unknown key, a metric it does not know, a point without its published figure (or with both forms), a
// name that is not the file's stem and a duplicate point id.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "sim/fidelity/field_set.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/fidelity/data";

/// A field file named `stem`.yaml in a per-process folder, holding `body`.
std::string write_field(const std::string& stem, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / ("hisparse_field_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / (stem + ".yaml");
  std::ofstream(path) << body;
  return path.string();
}

const char* kHead = R"(name: t
title: a test run
source:
  publication: "test"
  url: ""
  date: 2026-11-20
  quote: "none"
deployment: dsv32-8xh200-1tb
workload:
  input_tokens: 1000
  output_tokens: 200
points:
)";

std::string load_error(const std::string& body) {
  try {
    load_field_run(write_field("t", body));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the fixtures load as written, with the default context input + output / 2") {
  const std::vector<FieldRun> runs = load_field_set({kData});
  // Expect both fixtures in name order, every point of the GLM one read with its mode, concurrency and figure.
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].name == "fixture-dsv32-capacity");
  const FieldRun& glm = runs[1];
  CHECK(glm.closed_loop);
  CHECK(glm.overrides["kv_dtype"].Scalar() == "fp8");
  REQUIRE(glm.points.size() == 4);
  CHECK(glm.points[0].metric == FieldMetric::kTpotMs);
  CHECK(glm.points[0].context == 8192 + 1024 / 2);
  CHECK(glm.points[0].recorded_error_pct == std::optional<double>(0.0));
  CHECK(glm.points[2].metric == FieldMetric::kGain);
  CHECK(glm.points[3].metric == FieldMetric::kMaxConcurrency);
  CHECK(glm.points[3].concurrency == 0);
  CHECK(runs[0].points[1].published_range == std::optional<std::pair<double, double>>({20.0, 40.0}));
}

TEST_CASE("an unknown key is an error naming the file, the key path and its line") {
  const std::string e = load_error(std::string(kHead) + "  - id: a\n    metric: tpot_ms\n    mode: hisparse\n"
                                   "    concurrency: 1\n    published: 10\n    tolerance_pct: 10\n    tolerence: 3\n");
  // Expect the point's key path and line 19 (the misspelt key).
  CHECK(e.find("t.yaml") != std::string::npos);
  CHECK(e.find("points[0].tolerence") != std::string::npos);
  CHECK(e.find("line 19") != std::string::npos);
}

TEST_CASE("a metric outside the schema is an error listing the four") {
  const std::string e = load_error(std::string(kHead) + "  - id: a\n    metric: ttft_ms\n    mode: hisparse\n"
                                   "    concurrency: 1\n    published: 10\n    tolerance_pct: 15\n");
  CHECK(e.find("points[0].metric") != std::string::npos);
  CHECK(e.find("'ttft_ms'") != std::string::npos);
  CHECK(e.find("max_concurrency") != std::string::npos);
}

TEST_CASE("a point needs exactly one of published and published_range") {
  const std::string point = "  - id: a\n    metric: tpot_ms\n    mode: hisparse\n    concurrency: 1\n";
  const std::string none = load_error(std::string(kHead) + point + "    tolerance_pct: 10\n");
  CHECK(none.find("exactly one of published and published_range (got neither)") != std::string::npos);
  CHECK(none.find("line 13") != std::string::npos);
  const std::string both =
      load_error(std::string(kHead) + point + "    published: 1\n    published_range: [1, 2]\n    tolerance_pct: 10\n");
  CHECK(both.find("(got both)") != std::string::npos);
  const std::string bad_range =
      load_error(std::string(kHead) + point + "    published_range: [3, 2]\n    tolerance_pct: 10\n");
  CHECK(bad_range.find("0 < low <= high") != std::string::npos);
}

TEST_CASE("values are range-checked and the schema's cross-field rules hold") {
  const std::string base = "  - id: a\n    metric: tpot_ms\n    mode: hisparse\n    published: 10\n    tolerance_pct: 10\n";
  // Expect concurrency 0 refused (clients >= 1), a gain with a mode refused, max_concurrency with a concurrency refused.
  CHECK(load_error(std::string(kHead) + base + "    concurrency: 0\n").find("points[0].concurrency") != std::string::npos);
  CHECK(load_error(std::string(kHead) + "  - id: g\n    metric: gain\n    mode: hisparse\n    concurrency: 4\n"
                   "    published: 2\n    tolerance_pct: 15\n")
            .find("omit mode") != std::string::npos);
  CHECK(load_error(std::string(kHead) + "  - id: m\n    metric: max_concurrency\n    mode: full\n    concurrency: 4\n"
                   "    published: 2\n    tolerance_pct: 5\n")
            .find("omit concurrency") != std::string::npos);
  CHECK(load_error(std::string(kHead) + base + "    concurrency: 1\n  - id: a\n    metric: tpot_ms\n    mode: full\n"
                   "    concurrency: 1\n    published: 1\n    tolerance_pct: 10\n")
            .find("id 'a' appears twice") != std::string::npos);
  std::string renamed = std::string(kHead) + base + "    concurrency: 1\n";
  renamed.replace(renamed.find("name: t"), 7, "name: other");
  CHECK(load_error(renamed).find("expected the file's stem 't'") != std::string::npos);
}

TEST_CASE("an override the deployment has no field for is an error naming it and its line") {
  std::string body = std::string(kHead) + "  - id: a\n    metric: tpot_ms\n    mode: hisparse\n    concurrency: 1\n"
                     "    published: 10\n    tolerance_pct: 15\n";
  body.replace(body.find("workload:"), 9, "overrides:\n  kv_dtype: fp8\n  buffer_size: 4096\nworkload:");
  const std::string e = load_error(body);
  // Expect the misspelt key on line 11, with the ScenarioOverrides fields it may be.
  CHECK(e.find("unknown key 'overrides.buffer_size' (line 11)") != std::string::npos);
  CHECK(e.find("device_buffer_size") != std::string::npos);
}

TEST_CASE("the simulated throughput a run is held against is makespan unless the file says decode_steady") {
  const std::string point = "  - id: a\n    metric: tokens_per_s\n    mode: hisparse\n    concurrency: 1\n"
                            "    published: 10\n    tolerance_pct: 10\n";
  // Expect the default when the workload does not name it.
  CHECK(load_field_run(write_field("t", std::string(kHead) + point)).throughput == "makespan");
  // Expect decode_steady as written.
  std::string steady = std::string(kHead) + point;
  steady.replace(steady.find("  output_tokens: 200\n"), 20, "  output_tokens: 200\n  throughput: decode_steady");
  CHECK(load_field_run(write_field("t", steady)).throughput == "decode_steady");
  // Expect any other value to be an error naming the key and the choices.
  std::string bad = std::string(kHead) + point;
  bad.replace(bad.find("  output_tokens: 200\n"), 20, "  output_tokens: 200\n  throughput: wall");
  const std::string e = load_error(bad);
  CHECK(e.find("workload.throughput") != std::string::npos);
  CHECK(e.find("decode_steady") != std::string::npos);
}

TEST_CASE("scored_by is plan unless the file says simulate, and simulate needs a closed-loop run") {
  const std::string point = "  - id: a\n    metric: tokens_per_s\n    mode: full\n    concurrency: 1\n"
                            "    published: 10\n    tolerance_pct: 10\n";
  auto with = [&](const std::string& lines) {
    std::string body = std::string(kHead) + point;
    body.replace(body.find("  output_tokens: 200\n"), 20, "  output_tokens: 200\n" + lines);
    return body;
  };
  // Expect the default when the workload does not name it.
  CHECK(load_field_run(write_field("t", std::string(kHead) + point)).scored_by == "plan");
  // Expect simulate (and total_makespan) as written on a closed-loop run.
  const FieldRun run =
      load_field_run(write_field("t", with("  closed_loop: true\n  throughput: total_makespan\n  scored_by: simulate")));
  CHECK(run.scored_by == "simulate");
  CHECK(run.throughput == "total_makespan");
  // Expect simulate without a closed loop to be an error naming the key and what it needs.
  const std::string e = load_error(with("  scored_by: simulate"));
  CHECK(e.find("workload.scored_by") != std::string::npos);
  CHECK(e.find("closed_loop: true") != std::string::npos);
  // Expect any other value to be an error listing the two.
  CHECK(load_error(with("  scored_by: engine")).find("simulate") != std::string::npos);
}

TEST_CASE("derived_overrides names an override of the file and the points it was read off") {
  const std::string point = "  - id: cap\n    metric: max_concurrency\n    mode: full\n    published: 6\n"
                            "    role: fitted\n    role_reason: the pool was read off it\n    tolerance_pct: 5\n";
  std::string head = kHead;
  head.replace(head.find("workload:"), 9, "overrides:\n  full_pool_tokens: 240064\nworkload:");
  // Expect the pair (override key, point id) as written.
  const FieldRun ok =
      load_field_run(write_field("t", head + point + "derived_overrides:\n  full_pool_tokens: [cap]\n"));
  REQUIRE(ok.derived_overrides.size() == 1);
  CHECK(ok.derived_overrides[0] == std::pair<std::string, std::string>{"full_pool_tokens", "cap"});
  // Expect an error naming the key when the file does not set that override.
  std::string e = load_error(head + point + "derived_overrides:\n  kv_dtype: [cap]\n");
  CHECK(e.find("derived_overrides.kv_dtype") != std::string::npos);
  CHECK(e.find("no such key under overrides") != std::string::npos);
  // Expect an error naming the id when the point does not exist.
  e = load_error(head + point + "derived_overrides:\n  full_pool_tokens: [capacity]\n");
  CHECK(e.find("'capacity'") != std::string::npos);
  CHECK(e.find("point ids") != std::string::npos);
  // Expect the point an override was read off to say so (role: fitted), else an error naming it.
  const std::string role = "    role: fitted\n    role_reason: the pool was read off it\n";
  std::string held = point;
  held.replace(held.find(role), role.size(), "");
  e = load_error(head + held + "derived_overrides:\n  full_pool_tokens: [cap]\n");
  CHECK(e.find("point 'cap' (line") != std::string::npos);
  CHECK(e.find("sets this override, so it needs `role: fitted`") != std::string::npos);
}

TEST_CASE("bands are per metric, role: fitted needs its reason, expected_miss and plausible are checked") {
  // Expectation: a TPOT point at ±15 is an error naming the band of tpot_ms (10); role: fitted without role_reason,
  // an empty expected_miss, a one-value plausible set and an unknown plausible key are errors naming the key.
  const std::string point = "  - id: a\n    metric: tpot_ms\n    mode: hisparse\n    concurrency: 1\n    published: 10\n";
  CHECK(load_error(std::string(kHead) + point + "    tolerance_pct: 15\n")
            .find("got 15, expected 10, the band of every tpot_ms point") !=
        std::string::npos);
  CHECK(load_error(std::string(kHead) + point + "    role: fitted\n    tolerance_pct: 10\n").find("role_reason") !=
        std::string::npos);
  CHECK(load_error(std::string(kHead) + point + "    expected_miss: \"\"\n    tolerance_pct: 10\n")
            .find("expected why the point misses") != std::string::npos);
  CHECK(load_error(std::string(kHead) + point + "    plausible: {kv_dtype: [fp8]}\n    tolerance_pct: 10\n")
            .find("at least two values") != std::string::npos);
  CHECK(load_error(std::string(kHead) + point + "    plausible: {engine: [a, b]}\n    tolerance_pct: 10\n")
            .find("plausible.engine (line") != std::string::npos);
  const FieldRun ok = load_field_run(write_field(
      "t", std::string(kHead) + point + "    expected_miss: \"measured: x\"\n    plausible: {kv_dtype: [bf16, fp8]}\n"
                                       "    tolerance_pct: 10\n"));
  CHECK(ok.points[0].expected_miss == "measured: x");
  REQUIRE(ok.points[0].plausible.size() == 1);
  CHECK(ok.points[0].plausible[0].values == std::vector<std::string>{"bf16", "fp8"});
}
