// @brief IndexShare in replay: a trace declared with shared layers (traces/shared_topk_source.h) replays each shared
// layer on its anchor's list, so the shared layer's buffer sees exactly the anchor's selections.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.h"
#include "sim/replay/replay_engine.h"
#include "tests/sim/vector_trace_source.h"
#include "traces/shared_topk_source.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

constexpr int32_t kLayers = 6, kTopK = 3, kSteps = 24;

/// One request, every layer its own list (no two layers alike): positions spread by layer-dependent strides.
std::unique_ptr<traces::TraceSource> distinct_layers_trace() {
  traces::TraceMeta meta;
  meta.layers = kLayers;
  meta.top_k = kTopK;
  meta.source = "distinct-layers (test)";
  std::vector<traces::StepRecord> recs;
  for (int32_t s = 0; s < kSteps; ++s) {
    traces::StepRecord r;
    r.request_id = 7;
    r.step = s;
    r.seq_len = 10 + s;
    for (int32_t l = 0; l < kLayers; ++l) {
      // Offsets 0, n/3 and 2n/3 apart: three distinct positions below n for any n >= 10.
      std::vector<int32_t> list;
      for (int32_t j = 0; j < kTopK; ++j) list.push_back((s * (2 * l + 3) + l + j * (r.seq_len / 3)) % r.seq_len);
      std::sort(list.begin(), list.end());
      r.positions.insert(r.positions.end(), list.begin(), list.end());
    }
    recs.push_back(r);
  }
  return std::make_unique<VectorSource>(meta, recs);
}

/// misses[layer][step] of one sglang-lru replay at H = 4.
std::vector<std::vector<int32_t>> layer_misses(traces::TraceSource& src) {
  ReplayOptions opt;
  opt.policies = {"sglang-lru"};
  opt.buffer_sizes = {4};
  opt.keep_step_rows = true;
  std::vector<std::vector<int32_t>> out(kLayers);
  run_replay(src, opt, [&](const ReplayRequestRows& rows) {
    for (int32_t l = 0; l < kLayers; ++l)
      for (const ReplayStepRow& row : rows.rows[0][static_cast<size_t>(l)]) out[static_cast<size_t>(l)].push_back(row.misses);
  });
  return out;
}

}  // namespace

TEST_CASE("shared layers take their anchor's list: group 2, offset 2 → anchors 0, 1, 3, 5") {
  // max(l − 2 + 1, 0) mod 2 = 0 for l = 0 (0), 1 (0), 3 (2), 5 (4): layers 2 and 4 share 1 and 3.
  traces::SharedTopkTraceSource shared(distinct_layers_trace(), 2, 2);
  CHECK(shared.shared_layers() == 2);
  traces::StepRecord r;
  REQUIRE(shared.next(r));
  auto list = [&](int l) { return std::vector<int32_t>(r.layer(l, kTopK), r.layer(l, kTopK) + kTopK); };
  CHECK(list(2) == list(1));
  CHECK(list(4) == list(3));
  CHECK(list(1) != list(0));  // anchors keep their own lists
  CHECK(list(5) != list(3));
}

TEST_CASE("a replay of declared shared layers moves the anchor's rows in every shared layer") {
  // GLM-5.2's declaration (group 4, offset 3) over 6 layers: anchors 0, 1, 2 (max(l − 2, 0) = 0) and none of 3..5
  // ((l − 2) mod 4 ≠ 0), so layers 3, 4 and 5 replay layer 2's list and miss exactly where it does, step by step.
  auto raw = distinct_layers_trace();
  const auto before = layer_misses(*raw);
  // Without the declaration the layers differ (this test could fail).
  CHECK(before[3] != before[2]);
  traces::SharedTopkTraceSource shared(distinct_layers_trace(), 4, 3);
  CHECK(shared.shared_layers() == 3);
  const auto after = layer_misses(shared);
  for (int l : {3, 4, 5}) CHECK(after[static_cast<size_t>(l)] == after[2]);
  for (int l : {0, 1, 2}) CHECK(after[static_cast<size_t>(l)] == before[static_cast<size_t>(l)]);  // anchors unchanged
}

TEST_CASE("a shared-layer declaration outside the trace's layers is refused, naming it") {
  // Group 7 of a 6-layer trace would share nothing it could name: an error, not a silent no-op.
  CHECK_THROWS_WITH_AS(traces::SharedTopkTraceSource(distinct_layers_trace(), 7, 1),
                       doctest::Contains("top-k group 7 out of range (expected 1..6"), Error);
  CHECK_THROWS_WITH_AS(traces::SharedTopkTraceSource(distinct_layers_trace(), 2, 0),
                       doctest::Contains("skip offset 0 out of range"), Error);
}
