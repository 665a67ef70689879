// @brief Sweep grids (sim/sweep/sweep_grid.h): expansion order of products, zips and explicit points; strict
// validation naming file, key path, value and expectation.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_run.h"

using namespace hisparse;
using namespace hisparse::sim::sweep;

namespace {

const std::string kTraceDir = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled";

Grid parse(const std::string& text) { return parse_grid(text, "grid.yaml", kTraceDir); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sweep grid: the product runs its first axis outermost, zips after, explicit points last") {
  const Grid g = parse(R"(
sweep: t
jobs:
  - kind: plan
    grid:
      scenario: dsv32-8xh200-1tb
      context: [16K, 32768]
      device_buffer_size: [2048, 4096, 8K]
    zip:
      - host_to_device_ratio: [2, 4]
        policy: [sglang-lru, belady]
    points:
      - {scenario: dsv32-8xh200-1tb, context: 1024}
)");
  REQUIRE(g.points.size() == 2 * 3 * 2 + 1);
  CHECK(g.name == "t");
  // context outermost, then buffer size, then the zip group (ratio and policy together).
  CHECK(g.points[0].context == 16384);
  CHECK(g.points[0].device_buffer_size == 2048);
  CHECK(g.points[0].host_to_device_ratio == 2);
  CHECK(g.points[0].policy == "sglang-lru");
  CHECK(g.points[1].host_to_device_ratio == 4);
  CHECK(g.points[1].policy == "belady");
  CHECK(g.points[2].device_buffer_size == 4096);
  CHECK(g.points[5].device_buffer_size == 8192);
  CHECK(g.points[6].context == 32768);
  CHECK(g.points[6].device_buffer_size == 2048);
  CHECK(g.points[12].context == 1024);
  CHECK(g.points[12].device_buffer_size == 0);  // the scenario's own
  for (size_t i = 0; i < g.points.size(); ++i) {
    CHECK(g.points[i].index == static_cast<int64_t>(i));
    CHECK(g.points[i].job == "jobs[0]");
  }
  CHECK(describe_point(g.points[1]).find("policy=belady") != std::string::npos);
}

TEST_CASE("sweep grid: jobs keep file order, settings and names; replay traces resolve against the grid's directory") {
  const Grid g = parse(R"(
sweep: t
replay_shard_requests: 7
jobs:
  - name: r
    kind: replay
    settings: {row_bytes: 656, shard_requests: 1}
    grid:
      trace: default.hstrace
      device_buffer_size: [2048, 4096]
  - name: s
    kind: simulate
    settings: {duration_s: 5}
    grid: {scenario: dsv32-8xh200-1tb, workload: synthetic_poisson, concurrency: [0, 8], mode: [full, hisparse]}
)");
  REQUIRE(g.points.size() == 2 + 4);
  CHECK(g.replay_shard_requests == 7);
  CHECK(g.points[0].kind == JobKind::kReplay);
  CHECK(g.points[0].trace == "default.hstrace");
  CHECK(g.points[0].trace_path == kTraceDir + "/default.hstrace");
  CHECK(g.points[0].settings.row_bytes == 656);
  CHECK(g.points[2].kind == JobKind::kSimulate);
  CHECK(g.points[2].settings.duration_s == 5);
  CHECK(g.points[2].mode == "full");
  CHECK(g.points[3].mode == "hisparse");
  CHECK(g.points[4].concurrency == 8);
  // The bundled trace holds 2 requests: shard_requests 1 splits the replay in two, in request order; its two buffer
  // sizes (same trace, policy and settings) are one replay pass.
  const auto items = plan_work(g);
  REQUIRE(items.size() == 2 + 4);
  CHECK(items[0].point == 0);
  CHECK(items[0].points == std::vector<int64_t>{0, 1});
  CHECK(items[0].shards == 2);
  CHECK(items[0].first_request == 0);
  CHECK(items[1].first_request == 1);
  CHECK(items[1].requests == 1);
  CHECK(items[1].points == std::vector<int64_t>{0, 1});
  CHECK(items[2].point == 2);
  CHECK(items[2].points == std::vector<int64_t>{2});
  CHECK(items[2].shards == 1);
}

TEST_CASE("sweep grid: every error names the file, the key path, the value and what was expected") {
  const std::string head = "sweep: t\njobs:\n";
  auto plan = [&](const std::string& grid) { return head + "  - kind: plan\n    grid: " + grid + "\n"; };
  struct Case {
    std::string text, expect[3];
  };
  const Case cases[] = {
      {"jobs: []\n", {"grid.yaml", "sweep", ""}},
      {"sweep: t\njobs: []\n", {"grid.yaml: jobs", "empty list", ""}},
      {"sweep: t\nfoo: 1\njobs: []\n", {"grid.yaml", "foo", ""}},
      {head + "  - kind: plot\n    grid: {}\n", {"jobs[0].kind", "'plot'", "plan"}},
      {plan("{scenario: dsv32-8xh200-1tb, context: [16Q]}"), {"jobs[0].grid.context", "'16Q'", "sequence length"}},
      {plan("{scenario: dsv32-8xh200-1tb, context: 1K, device_buffer_size: [-4]}"),
       {"jobs[0].grid.device_buffer_size", "'-4'", "device_buffer_size in tokens"}},
      {plan("{scenario: dsv32-8xh200-1tb, context: 1K, policy: [lru2]}"), {"grid.policy", "'lru2'", "sglang-lru"}},
      {plan("{scenario: no-such-node, context: 1K}"), {"jobs[0].grid.scenario", "no-such-node", "does not load"}},
      {plan("{scenario: dsv32-8xh200-1tb, context: 1K, workload: w}"), {"workload", "does not apply to a plan job", ""}},
      {plan("{scenario: dsv32-8xh200-1tb, context: 1K, colour: red}"), {"unknown axis 'colour'", "expected one of", ""}},
      {plan("{scenario: dsv32-8xh200-1tb}"), {"jobs[0] point", "needs axis 'context'", ""}},
      {plan("{scenario: dsv32-8xh200-1tb, context: []}"), {"jobs[0].grid.context", "non-empty list", ""}},
      {head + "  - kind: plan\n    grid: {scenario: dsv32-8xh200-1tb}\n    zip:\n      - {context: [1K, 2K], "
              "host_to_device_ratio: [2]}\n",
       {"zip[0].host_to_device_ratio", "got 1 values, expected 2", "same length"}},
      {head + "  - kind: plan\n    grid: {scenario: dsv32-8xh200-1tb, context: 1K}\n    zip:\n      - {context: [2K]}\n",
       {"axis 'context' is given twice", "", ""}},
      {head + "  - kind: plan\n    settings: {row_bytes: 5}\n    grid: {scenario: dsv32-8xh200-1tb, context: 1K}\n",
       {"settings.row_bytes", "does not apply to a plan job", ""}},
      {head + "  - kind: replay\n    grid: {trace: missing.hstrace, device_buffer_size: 4096}\n",
       {"jobs[0].grid.trace", "missing.hstrace", "does not open"}},
      {head + "  - kind: replay\n    grid: {trace: default.hstrace, device_buffer_size: 1024}\n",
       {"device_buffer_size 1024 is smaller than trace default.hstrace's top_k 2048", "", ""}},
      {head + "  - kind: plan\n", {"jobs[0]", "needs points", ""}},
      {head + "  - {kind: plan, name: a, grid: {scenario: dsv32-8xh200-1tb, context: 1K}}\n"
              "  - {kind: plan, name: a, grid: {scenario: dsv32-8xh200-1tb, context: 2K}}\n",
       {"job name 'a' is used twice", "", ""}},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.text);
    CAPTURE(c.text);
    CAPTURE(e);
    REQUIRE(!e.empty());
    for (const auto& want : c.expect)
      if (!want.empty()) CHECK(e.find(want) != std::string::npos);
  }
}

TEST_CASE("sweep grid: token counts") {
  int64_t v = 0;
  CHECK(parse_token_count("16K", &v));
  CHECK(v == 16384);
  CHECK(parse_token_count("2m", &v));
  CHECK(v == 2 * 1024 * 1024);
  CHECK(parse_token_count("4096", &v));
  CHECK(v == 4096);
  CHECK_FALSE(parse_token_count("4.5K", &v));
  CHECK_FALSE(parse_token_count("K", &v));
  CHECK_FALSE(parse_token_count("", &v));
  CHECK_FALSE(parse_token_count("-3", &v));
}

TEST_CASE("sweep grid: the shipped grids validate") {
  for (const char* name : {"example.yaml", "dsv32-8xh200-1tb.yaml"}) {
    CAPTURE(name);
    const Grid g = load_grid(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/sweeps/" + name);
    CHECK(g.points.size() > 4);
  }
}
