// @brief Dynamic residency in the planner and the advisor: the steady-state demotion count, the resident batch,
// the step of a resident batch (full KV's) and of a batch with demoted requests (the swap graph), the plan's row,
// and advise's candidate: at batch 1 never worse than full KV.
#include <doctest/doctest.h>

#include <string>

#include "core/scenario_loader.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/cost/step/dynamic_residency.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/plan/capacity_plan.h"
#include "tests/sim/advise_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("dynamic residency: steady-state demotions, the longest first, whole requests") {
  const int64_t page = 64, H = 4096;
  // Expected: 4 requests of 16,384 tokens need 65,536 resident tokens; a pool of 60,000 is 5,536 short and each
  // demotion frees 16,384 − (4,096 + 64) = 12,224, so one request is demoted; a pool of 65,536 holds them all.
  CHECK(steady_swap_requests(4, ContextMix::single(16384), 60000, H, page) == 1);
  CHECK(steady_swap_requests(4, ContextMix::single(16384), 65536, H, page) == 0);
  CHECK(max_resident_batch(ContextMix::single(16384), 65536, H, page, 100) == 4);
  // A pool smaller than the buffers: every request in swap mode.
  CHECK(steady_swap_requests(4, ContextMix::single(16384), 1000, H, page) == 4);
  // A mix: the 64K half is demoted before any 8K request (the longest first).
  ContextMix mix;
  mix.classes = {{8192, 0.5}, {65536, 0.5}};
  const std::vector<double> share = swap_share_by_class(mix, 0.5);
  CHECK(share[0] == doctest::Approx(0.0));
  CHECK(share[1] == doctest::Approx(1.0));
}

TEST_CASE("dynamic residency: a resident batch steps as full KV, a demoted one on the swap graph") {
  const Scenario s = bundled();
  const MissCurves misses = default_miss_curves(s);
  const int32_t H = s.deployment.hisparse.device_buffer_size;
  const MissFraction f = [&misses, H](int64_t n) { return misses.fraction(H, n); };
  const StepTimeModel full(s, CostParams{}, KvMode::kFull, nullptr);
  const StepTimeModel hs(s, CostParams{}, KvMode::kHiSparse, f);
  const StepTimeModel dyn(s, CostParams{}, KvMode::kDynamic, f);
  const ContextMix mix = ContextMix::single(32768);
  const int64_t resident = dyn.max_resident_batch(mix, 4096);
  REQUIRE(resident >= 1);
  // Expected: up to `resident` requests per rank fit the device pool with their full KV: the resident graph, full
  // KV's step to the nanosecond (the one-token backup is shorter than the compute it runs beside), no misses.
  for (int64_t B : {int64_t{1}, resident}) {
    CAPTURE(B);
    const StepEstimate d = dyn.step(B, mix), fk = full.step(B, mix);
    CHECK(dyn.swap_requests(B, mix) == 0);
    CHECK(d.step_ns == fk.step_ns);
    CHECK(d.misses == 0);
    CHECK(d.backup_bytes > 0);
  }
  // One more request: the longest are demoted, the batch runs the swap graph, loading misses for the demoted ones
  // only: fewer than HiSparse's (all swap) and a step no longer than HiSparse's.
  const int64_t B = resident + 1;
  CHECK(dyn.swap_requests(B, mix) >= 1);
  CHECK(dyn.swap_requests(B, mix) < B);
  const StepEstimate d = dyn.step(B, mix), h = hs.step(B, mix);
  CHECK(d.misses > 0);
  CHECK(d.misses < h.misses);
  CHECK(d.step_ns <= h.step_ns);
}

TEST_CASE("plan: a dynamic row per length with HiSparse's memory limits and its resident batch") {
  const Scenario s = bundled();
  PlanOptions po;
  po.seq_lens = {16384, 131072};
  const CapacityPlan p = compute_capacity_plan(s, po, default_miss_curves(s));
  REQUIRE(p.dynamic_rows.size() == 2);
  REQUIRE(p.rows.size() == 4);  // the full/HiSparse pairs stay as they were
  for (size_t i = 0; i < 2; ++i) {
    PlanRow h = p.rows[2 * i + 1], d = p.dynamic_rows[i];
    CAPTURE(d.seq_len);
    // Expected: any request can be demoted to its buffer, so the memory limits are HiSparse's; the resident batch
    // is the device pool over the paged length (16K: 261,504 / 16,384 = 15; 128K: 1).
    CHECK(d.mode == KvMode::kDynamic);
    CHECK(find_limit(d.limits, "hbm").per_rank == find_limit(h.limits, "hbm").per_rank);
    CHECK(d.resident_per_rank == static_cast<int64_t>(p.budget.device_pool_tokens.value) / d.seq_len);
    CHECK(d.max_concurrency >= h.max_concurrency);
  }
}

TEST_CASE("advise: the dynamic candidate at batch 1 is never worse than full KV, and its line says where it wins") {
  const Scenario s = bundled();
  const MissCurves misses = default_miss_curves(s);
  for (int64_t n : {int64_t{8192}, int64_t{32768}, int64_t{131072}}) {
    CAPTURE(n);
    const Advice a = advise(s, ContextMix::single(n), misses, AdviseOptions{});
    REQUIRE(a.dynamic.candidate.mode == KvMode::kDynamic);
    REQUIRE(!a.dynamic.by_concurrency.empty());
    const DynamicPoint& one = a.dynamic.by_concurrency.front();
    REQUIRE(one.batch_per_rank == 1);
    // Expected: one request per rank always fits the device pool resident, so dynamic runs full KV's step: its
    // tokens/s equal full KV's (never below), where HiSparse's small-batch regression shows.
    CHECK(one.dynamic_tokens_per_s >= one.full_tokens_per_s * (1 - 1e-12));
    CHECK(a.dynamic.ratio_to_full_at_batch_1 >= 1 - 1e-12);
    // And it never falls below both others anywhere: its memory limits are HiSparse's and its step at most HiSparse's.
    for (const auto& p : a.dynamic.by_concurrency)
      CHECK(p.dynamic_tokens_per_s >= std::min(p.full_tokens_per_s, p.hisparse_tokens_per_s) * (1 - 1e-9));
    const std::string line = dynamic_text(a.dynamic, 8);
    CHECK(line.find("at batch 1 it gives 1.00× of full KV's tokens/s") != std::string::npos);
    if (a.dynamic.best_from > 0) CHECK(line.find("more than both full KV and HiSparse from") != std::string::npos);
  }
}

TEST_CASE("dynamic residency, DeepSeek-V4: the device pool counts C4 entries (4 tokens each)") {
  // dsv4-flash-8xh200's C4 device pool with HiSparse: 757,836 entries; H = 1,024 entries, page 256 tokens.
  const int64_t pool = 757836, H = 1024, page = 256;
  // Expected: a 131,072-token request holds 131,072 / 4 = 32,768 entries resident, H + page / 4 = 1,088 demoted;
  // a 2,048-token one (512 entries ≤ H) holds its 512 entries either way.
  CHECK(resident_device_tokens(131072, page, 4) == 32768);
  CHECK(swap_device_tokens(131072, H, page, 4) == 1088);
  CHECK(swap_device_tokens(2048, H, page, 4) == 512);
  // Expected: floor(757,836 / 32,768) = 23 stay resident together; at 30, 30 × 32,768 − 757,836 = 225,204 entries
  // are short and each demotion frees 32,768 − 1,088 = 31,680: ceil(7.1) = 8 requests demoted.
  CHECK(max_resident_batch(ContextMix::single(131072), pool, H, page, 1000, 4) == 23);
  CHECK(steady_swap_requests(30, ContextMix::single(131072), pool, H, page, 4) == 8);
}
