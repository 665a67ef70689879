// @brief The sweep's ETA weighs the items left by their estimated cost (a fake clock), and the costs come out in the
// order the measured rates put them: a serving simulation above a plan point, a replay item by its buffer sizes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/progress.h"
#include "sim/sweep/sweep_cost.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_progress.h"
#include "sim/sweep/sweep_run.h"

using namespace hisparse;
using namespace hisparse::sim::sweep;

namespace {

/// `n` one-point items.
std::vector<WorkItem> single_items(int n) {
  std::vector<WorkItem> items(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) items[static_cast<size_t>(i)].point = i, items[static_cast<size_t>(i)].points = {i};
  return items;
}

}  // namespace

TEST_CASE("sweep progress: the ETA weighs the work left by its cost, not by the count of items") {
  // Issue 40's case: a grid's cheap plan points come first. 8 items of 0.01 s, then 4 of 10 s, on one worker.
  const std::vector<WorkItem> items = single_items(12);
  std::vector<double> cost(8, 0.01);
  cost.insert(cost.end(), 4, 10.0);
  double now = 0;
  std::string log;
  SweepProgress p(items.size(), items, cost, ProgressStyle::kLog, "sweep", [&] { return now; },
                  [&](const std::string& bytes) { log += bytes; }, /*interval_seconds=*/0);
  for (size_t i = 0; i < 8; ++i) {
    now += 0.01;
    p.item_done(i, true);
  }
  // 0.08 s in, the cheap 0.08 s of work done at 1 s of work per second: 40 s are left, not the 0.04 s a count
  // (8 of 12 items in 0.08 s) would say.
  CHECK(p.eta_seconds() == doctest::Approx(40.0));
  CHECK(log.find("sweep: 8/12 points done (8/12 work items), 0.1 s elapsed, ETA 0:40\n") != std::string::npos);
  // One expensive item later (at the rate its estimate said), 30 s are left.
  now += 10;
  p.item_done(8, false);
  CHECK(p.eta_seconds() == doctest::Approx(30.0));
  CHECK(log.find("sweep: 9/12 points done (9/12 work items, 1 failed), 10.1 s elapsed, ETA 0:30\n") !=
        std::string::npos);
  // Work running twice as slow as estimated doubles the ETA: the rate is this run's, the costs only weigh.
  now += 40;
  p.item_done(9, true);
  CHECK(p.eta_seconds() == doctest::Approx(20.0 * (50.08 / 20.08)));
}

TEST_CASE("sweep progress: items read back from the journal count as done but not in the rate") {
  const std::vector<WorkItem> items = single_items(3);
  double now = 0;
  std::string log;
  SweepProgress p(items.size(), items, {5, 5, 5}, ProgressStyle::kLog, "sweep", [&] { return now; },
                  [&](const std::string& bytes) { log += bytes; }, 0);
  p.item_resumed(0);
  // Nothing computed by this run yet: no rate, so no ETA.
  CHECK(p.eta_seconds() < 0);
  CHECK(p.line() == "sweep: 1/3 points done (1/3 work items), 0.0 s elapsed, ETA unknown");
  now = 2;
  p.item_done(1, true);
  // 5 s of estimated work in 2 s: 5 left at 2.5 per s, 2 s (the resumed item's 5 not credited to this run).
  CHECK(p.eta_seconds() == doctest::Approx(2.0));
  now = 4;
  p.item_done(2, true);
  p.finish();
  CHECK(log.substr(log.rfind("sweep:")) == "sweep: 3/3 points done (3/3 work items), 4.0 s elapsed, done\n");
}

TEST_CASE("sweep cost: a serving simulation costs more than a plan point, a replay item scales with its buffers") {
  const Grid g = parse_grid(R"(
sweep: t
replay_shard_requests: 1
jobs:
  - kind: plan
    grid: {scenario: dsv32-8xh200-1tb, context: [32K]}
  - kind: replay
    grid: {trace: default.hstrace, device_buffer_size: [2048, 4096, 8192], policy: [sglang-lru]}
  - kind: replay
    grid: {trace: default.hstrace, device_buffer_size: [2048], policy: [fifo]}
  - kind: simulate
    settings: {num_requests: 1024}
    grid: {scenario: dsv32-8xh200-1tb, workload: mooncake_conversation, concurrency: [64]}
)",
                            "grid.yaml", std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled");
  const std::vector<WorkItem> items = plan_work(g);
  const std::vector<double> s = work_item_seconds(g, items);
  REQUIRE(s.size() == items.size());
  // Items: the plan point; two shards (one request each) of the 3-buffer replay; two of the 1-buffer replay; the
  // simulation.
  REQUIRE(items.size() == 6);
  CHECK(items[1].points.size() == 3);
  CHECK(items[3].points.size() == 1);
  // One pass carries three buffer sizes: three times the single buffer's estimate (the same shard of one request).
  CHECK(s[1] == doctest::Approx(3 * s[3]));
  // The serving run (1,024 requests) is estimated above the plan point, as measured (seconds against 0.05 s).
  CHECK(s[5] > 10 * s[0]);
  for (double x : s) CHECK(x > 0);
}
