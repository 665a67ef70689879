// @brief Replay's percentiles by phase: the cold-start histograms hold exactly the step-layers of each request's first
// step and warm-up (steps 0..ceil(H/K) from its first), the same on both replay paths, the steady state is the rest,
// and the table, JSON and CSV report the two apart, labelled.
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <vector>

#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "sim/replay/replay_step_time.h"
#include "traces/trace_generator.h"

using namespace hisparse;

namespace {

traces::GeneratorOptions trace() {
  traces::GeneratorOptions o = traces::generator_preset("tiny");
  o.requests = 3;
  o.steps = 24;
  o.layers = 2;
  o.top_k = 16;
  o.prompt_len = 40;  // past every H below from the first step, so the cold start is not on the fast path
  o.seed = 5;
  return o;
}

struct Run {
  sim::ReplayResult result;
  std::vector<sim::ReplayRequestRows> rows;
};

Run replay(const std::vector<std::string>& policies) {
  auto src = traces::make_generated_trace(trace());
  sim::ReplayOptions o;
  o.policies = policies;
  o.buffer_sizes = {16, 32};
  o.row_bytes = 100;
  o.keep_step_rows = true;
  Run run;
  run.result = sim::run_replay(*src, o, [&](const sim::ReplayRequestRows& r) { run.rows.push_back(r); });
  return run;
}

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

}  // namespace

TEST_CASE("replay phases: cold start is each request's first step and warm-up, the steady state the rest") {
  // The driver without and with its look-ahead stage (belady present) give the same split.
  const Run online = replay({"sglang-lru"});
  const Run windowed = replay({"sglang-lru", "belady"});  // (its look-ahead windows)
  REQUIRE(online.result.configs.size() == 2);
  for (size_t c = 0; c < online.result.configs.size(); ++c) {
    const sim::ReplayConfigStats& s = online.result.configs[c];
    CAPTURE(s.buffer_size);
    CHECK(s.cold_miss_hist == windowed.result.configs[c].cold_miss_hist);
    CHECK(s.cold_step_miss_hist == windowed.result.configs[c].cold_step_miss_hist);
    // Recount from the rows: step-layers and misses of steps s <= ceil(H/K) from the request's first step.
    const int64_t W = (s.buffer_size + 15) / 16;
    int64_t cold_layers = 0, cold_misses = 0, cold_steps = 0;
    for (const auto& rr : online.rows) {
      for (size_t j = 0; j < rr.steps.size(); ++j) {
        if (rr.steps[j] - rr.steps.front() > W) continue;
        ++cold_steps;
        for (const auto& layer : rr.rows[c]) {
          ++cold_layers;
          cold_misses += layer[j].misses;
        }
      }
    }
    CHECK(cold_steps == 3 * (W + 1));
    CHECK(sum(s.cold_miss_hist) == cold_layers);
    CHECK(sum(s.cold_step_miss_hist) == cold_steps);
    int64_t weighted = 0;
    for (size_t m = 0; m < s.cold_miss_hist.size(); ++m) weighted += static_cast<int64_t>(m) * s.cold_miss_hist[m];
    CHECK(weighted == cold_misses);
    // Steady = all − cold, never negative, and it has the rest of the samples.
    const std::vector<int64_t> steady = sim::steady_histogram(s.miss_hist, s.cold_miss_hist);
    CHECK(sum(steady) == s.step_layers - cold_layers);
    for (int64_t x : steady) CHECK(x >= 0);
  }
  // Every decode step carries its index from its request's first step.
  REQUIRE(online.result.step_index.size() == online.result.step_seq_lens.size());
  CHECK(online.result.step_index == windowed.result.step_index);
  CHECK(online.result.step_index.front() == 0);
  CHECK(online.result.step_index[23] == 23);
  CHECK(online.result.step_index[24] == 0);
}

TEST_CASE("replay phases: the table, JSON and CSV label the steady-state and cold-start percentiles apart") {
  const Run run = replay({"sglang-lru"});
  const std::string table = sim::format_replay_table(run.result, 100);
  CHECK(table.find("steady p99") != std::string::npos);
  CHECK(table.find("cold p99") != std::string::npos);
  CHECK(table.find("first step and its warm-up") != std::string::npos);
  const std::string json = sim::replay_json(run.result, 100, "null");
  CHECK(json.find("\"steady\": {\"step_layers\": ") != std::string::npos);
  CHECK(json.find("\"cold_start\": {\"step_layers\": ") != std::string::npos);
  CHECK(json.find("\"cold_start_miss_histogram\": [") != std::string::npos);
  CHECK(sim::replay_csv(run.result).find("misses_steady_p99,misses_cold_start_p99") != std::string::npos);
  // A result without cold-start counts (built by hand) reads as all steady.
  sim::ReplayResult r;
  sim::ReplayConfigStats s;
  s.policy = "sglang-lru";
  s.buffer_size = 32;
  s.miss_hist = {0, 0, 4};
  s.step_miss_hist = {0, 0, 0, 0, 4};
  r.configs.push_back(s);
  CHECK(sim::replay_json(r, 10, "null").find("\"cold_start\": {\"step_layers\": 0, \"p50\": null") != std::string::npos);
}
