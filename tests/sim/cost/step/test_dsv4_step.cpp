// @brief The decode step of DeepSeek-V4 (sim/cost/step/decode_cost_model_dsv4.cpp and the estimator's C4 hooks): the
// selection works over n / 4 C4 entries on the C4 layers only, one term by hand; misses, copies and backups count C4
// entries; the window and C128 rows enter the attention.
#include <doctest/doctest.h>

#include <cstdint>

#include "core/scenario_loader.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/cost/step/step_time_model.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("dsv4 step: top-k over the n / 4 C4 entries of the 21 C4 layers, by hand") {
  const Scenario s = load_scenario("dsv4-flash-8xh200");
  const CostParams p;  // the built-in test defaults: roofline, efficiency.topk {0.4, 0.4}, 520 ns graph gap
  const StepEstimator est(s, p, KvMode::kHiSparse);
  GpuBatch b;
  est.add_request(b, 131072);
  // One request of 131,072 tokens: 32,768 C4 entries; the C4 layers select top_k 512 of them, every layer attends
  // the 128-token window.
  CHECK(est.entries(131072) == 32768);
  CHECK(b.sum_attended == 512);
  CHECK(b.sum_window_attended == 128);
  CHECK(b.slow_path == 1);  // 32,768 entries > H = 1,024
  // Top-k reads the 32,768 fp32 scores and writes 512 indices: 32,768 × 4 + 512 × 4 = 133,120 B; at H200's 4.8 TB/s
  // × 0.4 that is 69.33 ns → 70 ns, plus the 520 ns graph gap = 590 ns, once per C4 layer: 21 × 590 = 12,390 ns.
  const GpuPhases ph = est.cost().gpu_phases(b);
  CHECK(ph.topk == 12390);
  // The full-KV step selects the same way (the model's index_topk over the C4 entries).
  const StepEstimator full(s, p, KvMode::kFull);
  CHECK(full.cost().gpu_phases(b).topk == 12390);
  CHECK(full.cost().gpu_phases(b).swap_in == 0);
  CHECK(ph.swap_in > 0);
}

TEST_CASE("dsv4 step: misses, the miss copy and the backup count C4 entries over the C4 layers") {
  const Scenario s = load_scenario("dsv4-flash-8xh200");
  const CostParams p;
  const StepTimeModel m(s, p, true, [](int64_t) { return 0.5; });
  // At a miss fraction of 0.5: (min(32,768, 512) − 1) × 21 C4 layers × 0.5 = 5,365.5 rows per request and step.
  CHECK(m.misses_per_request(131072) == doctest::Approx(5365.5));
  // 4,096 tokens = 1,024 entries ≤ H: every selection stays in the buffer.
  CHECK(m.misses_per_request(4096) == 0);
  const StepEstimator& est = m.estimator();
  // One swap-in call per C4 layer, each paying PCIe's per-operation latency (uncalibrated).
  CHECK(est.miss_copy(1, 210).latency == 21 * s.hardware.pcie.latency_ns);
  // The backup: one new C4 entry per 4 tokens on each of the 21 C4 layers: 64 requests × 21 / 4 × 584 B = 196,224 B.
  CHECK(est.backup(64).bytes == doctest::Approx(196224.0));
}

TEST_CASE("dsv4 step: longer contexts cost more attention (C128 rows) and indexer (C4 scores), not more top-k rows") {
  const Scenario s = load_scenario("dsv4-flash-8xh200");
  const CostParams p;
  const StepEstimator est(s, p, KvMode::kFull);
  GpuBatch shortb, longb;
  for (int i = 0; i < 32; ++i) est.add_request(shortb, 65536), est.add_request(longb, 1048576);
  // Both select 512 C4 entries and attend 128 window rows; only the C128 rows (n / 128) and the indexer's n / 4
  // scores differ, so the long batch's attention and indexer are larger.
  const GpuPhases a = est.cost().gpu_phases(shortb), c = est.cost().gpu_phases(longb);
  CHECK(c.attention > a.attention);
  CHECK(c.indexer > a.indexer);
  CHECK(shortb.sum_attended == longb.sum_attended);
}
