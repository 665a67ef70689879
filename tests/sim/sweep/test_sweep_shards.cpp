// @brief Replays sharded by request (sim/sweep/replay_shards.h) merge to exactly the single replay of the whole trace;
// the counters survive their text form; a sweep point's row is the same however it is sharded.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "sim/replay/replay_engine.h"
#include "sim/sweep/replay_shards.h"
#include "sim/sweep/sweep_run.h"
#include "sim/sweep/sweep_table.h"
#include "traces/trace_generator.h"

using namespace hisparse;
using namespace hisparse::sim;
using namespace hisparse::sim::sweep;

namespace {

traces::GeneratorOptions small_trace() {
  traces::GeneratorOptions g;
  g.requests = 5;
  g.steps = 24;
  g.layers = 3;
  g.top_k = 32;
  g.prompt_len = 90;  // n crosses H = 96 during the replay: fast and slow paths both taken
  g.recent_window = 8;
  g.topic_width = 16;
  g.seed = 7;
  return g;
}

ReplayOptions options() {
  ReplayOptions o;
  o.policies = {"sglang-lru", "belady", "fifo"};
  o.buffer_sizes = {32, 48, 96};
  o.row_bytes = 656;
  o.lookahead_bytes = 1 << 12;  // a window shorter than a request: belady's sliding look-ahead is per request too
  return o;
}

void check_equal(const ReplayResult& a, const ReplayResult& b) {
  CHECK(a.requests == b.requests);
  CHECK(a.decode_steps == b.decode_steps);
  CHECK(a.entries == b.entries);
  CHECK(a.lookahead_cut_requests == b.lookahead_cut_requests);
  REQUIRE(a.configs.size() == b.configs.size());
  for (size_t c = 0; c < a.configs.size(); ++c) {
    CAPTURE(c);
    const auto &x = a.configs[c], &y = b.configs[c];
    CHECK(x.policy == y.policy);
    CHECK(x.buffer_size == y.buffer_size);
    CHECK(x.selected == y.selected);
    CHECK(x.hits == y.hits);
    CHECK(x.newest_hits == y.newest_hits);
    CHECK(x.misses == y.misses);
    CHECK(x.h2d_bytes == y.h2d_bytes);
    CHECK(x.step_layers == y.step_layers);
    CHECK(x.fast_path_step_layers == y.fast_path_step_layers);
    CHECK(x.decode_steps == y.decode_steps);
    CHECK(x.miss_hist == y.miss_hist);
    CHECK(x.step_miss_hist == y.step_miss_hist);
    CHECK(x.cold_miss_hist == y.cold_miss_hist);  // the cold start is per request: shards split none
    CHECK(x.cold_step_miss_hist == y.cold_step_miss_hist);
  }
}

}  // namespace

TEST_CASE("replay shards: request ranges cover the trace once, in order") {
  const auto s = request_shards(5, 2);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == std::make_pair<int64_t, int64_t>(0, 2));
  CHECK(s[1] == std::make_pair<int64_t, int64_t>(2, 2));
  CHECK(s[2] == std::make_pair<int64_t, int64_t>(4, 1));
  CHECK(request_shards(3, 8).size() == 1);
  CHECK_THROWS_AS(request_shards(3, 0), Error);
  auto view = request_range_source(traces::make_generated_trace(small_trace()), 1, 3);
  CHECK(view->request_ids() == std::vector<int64_t>{1, 2, 3});
  traces::StepRecord r;
  std::vector<int64_t> seen;
  int64_t steps = 0;
  while (view->next(r)) {
    if (seen.empty() || seen.back() != r.request_id) seen.push_back(r.request_id);
    ++steps;
  }
  CHECK(seen == std::vector<int64_t>{1, 2, 3});
  CHECK(steps == 3 * 24);
  CHECK_THROWS_AS(request_range_source(traces::make_generated_trace(small_trace()), 4, 2), Error);
}

TEST_CASE("replay shards: every split merges to the single replay, field for field") {
  auto whole_src = traces::make_generated_trace(small_trace());
  const ReplayResult whole = run_replay(*whole_src, options());
  REQUIRE(whole.requests == 5);
  REQUIRE(whole.lookahead_cut_requests > 0);  // the look-ahead really is cut, so the split is exercised with it
  bool some_misses = false;
  for (const auto& c : whole.configs) some_misses = some_misses || c.misses > 0;
  REQUIRE(some_misses);
  for (int64_t per : {1, 2, 3, 5}) {
    CAPTURE(per);
    ReplayResult merged;
    ReplayResult via_text;
    for (const auto& [first, count] : request_shards(5, per)) {
      auto src = request_range_source(traces::make_generated_trace(small_trace()), first, count);
      const ReplayResult part = run_replay(*src, options());
      merge_replay_result(merged, part);
      merge_replay_result(via_text, parse_replay_counters(replay_counters_text(part), "test"));
    }
    check_equal(merged, whole);
    check_equal(via_text, whole);
    CHECK(merged.step_seq_lens == whole.step_seq_lens);
    CHECK(merged.step_index == whole.step_index);
  }
}

TEST_CASE("replay shards: malformed counter text is refused, naming where it came from") {
  CHECK_THROWS_WITH_AS(parse_replay_counters("replay-counters 3\n", "shard 3"), doctest::Contains("shard 3"), Error);
  CHECK_THROWS_AS(parse_replay_counters("nonsense", "x"), Error);
  auto src = traces::make_generated_trace(small_trace());
  std::string t = replay_counters_text(run_replay(*src, options()));
  CHECK_THROWS_AS(parse_replay_counters(t + "extra 1\n", "x"), Error);
  const size_t hist = t.find("miss_hist 33 ");
  REQUIRE(hist != std::string::npos);
  CHECK_THROWS_AS(parse_replay_counters(t.replace(hist, 13, "miss_hist 33 99:1 "), "x"), Error);
}

TEST_CASE("sweep: a replay point's row is the same unsharded and sharded; tables keep grid order") {
  const std::string dir = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled";
  auto grid_text = [](int per) {
    return "sweep: t\nreplay_shard_requests: " + std::to_string(per) +
           "\njobs:\n  - kind: replay\n    grid: {trace: default.hstrace, device_buffer_size: [4096], policy: "
           "[sglang-lru]}\n";
  };
  std::vector<std::string> csv;
  for (int per : {1, 64}) {
    const Grid g = parse_grid(grid_text(per), "grid.yaml", dir);
    const auto items = plan_work(g);
    CHECK(items.size() == (per == 1 ? 2u : 1u));
    std::vector<std::string> texts;
    for (const auto& w : items) texts.push_back(run_work_item(g, w));
    const PointRow row = finish_point(g, g.points[0], texts);
    CHECK(row.ok);
    csv.push_back(table_csv(g, {row}));
    CHECK(table_json(g, {row}).find("\"requests\": 2") != std::string::npos);
    CHECK(table_markdown(g, {row}).find("measured") != std::string::npos);
  }
  CHECK(csv[0] == csv[1]);
  const Grid g = parse_grid(grid_text(1), "grid.yaml", dir);
  const PointRow bad = failed_point(g.points[0], "boom");
  CHECK(table_csv(g, {bad}).find("failed") != std::string::npos);
  CHECK(table_markdown(g, {bad}).find("boom") != std::string::npos);
  CHECK_THROWS_AS(table_csv(g, {}), Error);  // one row per point, always
}

TEST_CASE("sweep: a trace's buffer sizes share one replay item, and each point keeps the row of its own replay") {
  const std::string dir = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled";
  const Grid g = parse_grid(
      "sweep: t\nreplay_shard_requests: 1\njobs:\n  - kind: replay\n    grid: {trace: default.hstrace, policy: "
      "[sglang-lru, belady], device_buffer_size: [2048, 2560, 3072, 3584, 4096, 4608, 5120, 5632, 6144, 6656]}\n",
      "grid.yaml", dir);
  REQUIRE(g.points.size() == 20);
  const auto items = plan_work(g);
  REQUIRE(items.size() == 4 * 2);  // per policy a group of 8 buffer sizes and one of 2, each in 2 request shards
  std::vector<std::vector<std::string>> texts(g.points.size());
  for (const auto& w : items) {
    REQUIRE(!w.points.empty());
    CHECK(w.points.size() <= kMaxBuffersPerReplay);
    CHECK(w.point == w.points.front());
    for (int64_t p : w.points) CHECK(g.points[static_cast<size_t>(p)].policy == g.points[static_cast<size_t>(w.point)].policy);
    const std::string text = run_work_item(g, w);
    for (int64_t p : w.points) texts[static_cast<size_t>(p)].push_back(text);
  }
  std::vector<PointRow> grouped, alone;
  for (const GridPoint& p : g.points) {
    REQUIRE(texts[static_cast<size_t>(p.index)].size() == 2);  // both shards reached every point
    grouped.push_back(finish_point(g, p, texts[static_cast<size_t>(p.index)]));
    std::vector<std::string> own;
    for (int s = 0; s < 2; ++s) {
      WorkItem w = items[static_cast<size_t>(s)];  // the first group's shard s: the same request range
      w.point = p.index;
      w.points = {p.index};
      own.push_back(run_work_item(g, w));
    }
    alone.push_back(finish_point(g, p, own));
    CHECK(grouped.back().ok);
  }
  CHECK(table_csv(g, grouped) == table_csv(g, alone));
  // The rows differ by buffer size, so a point given another H's counters would have shown above.
  auto misses = [](const PointRow& r) {
    for (const auto& m : r.metrics)
      if (m.key == "misses") return m.value;
    return std::string();
  };
  const GridPoint &a = g.points[0], &b = g.points[2];
  REQUIRE(a.policy == b.policy);
  REQUIRE(a.device_buffer_size != b.device_buffer_size);
  CHECK(misses(grouped[0]) != misses(grouped[2]));
}
