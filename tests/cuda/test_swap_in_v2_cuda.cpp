// @brief The HiSparse V2 swap-in kernel (cuda/swap_in_v2.h) against cpu_ref::swap_in_v2: the hand-worked steps of
// tests/cpu_ref/test_swap_in_v2.cpp (free slot, stale slot, resident page) on the GPU; the two coordinators' evicted
// ranges side by side against cpu_ref (current: HiCache evicted only the prefix's tail nodes, so its head stays
// resident; older: the whole prefix), several steps; and the validation library's swap-in-v2 operation (rows of both
// coordinators) over random cases and a generated trace. Without a GPU the binary reports SKIPPED.
// On the lent GPU: `build/release/tests/test_cuda --test-case='cuda v2*'` runs all three.
#include <doctest/doctest.h>

#include <vector>

#include "core/hisparse_v2.h"
#include "cpu_ref/backend_cpu.h"
#include "cpu_ref/swap_in_v2.h"
#include "cuda/backend_cuda.h"
#include "cuda/swap_in_v2.h"
#include "validate/validate.h"

using namespace hisparse;

TEST_CASE("cuda v2: the hand-worked steps (H = 8, K = 4, evicted prefix 0..19), every output and the state") {
  struct Step {
    std::vector<int32_t> sel, slot_of, loads, slot_pos;
    std::vector<int64_t> counters;  // selected, resident, hits, misses
  };
  // The same steps as the CPU test: empty slots first (step 1), then stale ones in slot order (steps 3 and 4),
  // resident pages at slot H = 8, position 22 resident without being the newest token.
  const std::vector<Step> steps = {
      {{20, 3, 7, -1}, {8, 0, 1, -1}, {0, 1, -1, -1}, {3, 7, -1, -1, -1, -1, -1, -1}, {3, 1, 0, 2}},
      {{7, 11, 21, 12}, {1, 2, 8, 3}, {2, 3, -1, -1}, {3, 7, 11, 12, -1, -1, -1, -1}, {4, 1, 1, 2}},
      {{13, 14, 15, 16}, {4, 5, 6, 7}, {4, 5, 6, 7}, {3, 7, 11, 12, 13, 14, 15, 16}, {4, 0, 0, 4}},
      {{14, 0, 22, 1}, {5, 0, 8, 1}, {0, 1, -1, -1}, {0, 1, 11, 12, 13, 14, 15, 16}, {4, 1, 1, 2}},
      {{3, 15, 24, 19}, {0, 6, 8, 1}, {0, 1, -1, -1}, {3, 19, 11, 12, 13, 14, 15, 16}, {4, 1, 1, 2}},
  };
  std::vector<int32_t> slot_pos(8, -1), end = {20}, slot_of(4), load_slot(4), load_pos(4);
  std::vector<int64_t> counters(cuda::kSwapInV2CounterWords);
  for (size_t j = 0; j < steps.size(); ++j) {
    INFO("step " << j);
    cuda::SwapInV2Batch b;
    b.rows = 1;
    b.top_k = 4;
    b.H = 8;
    b.selected = steps[j].sel.data();
    b.evicted_end = end.data();
    b.slot_pos = slot_pos.data();
    b.slot_of = slot_of.data();
    b.load_slot = load_slot.data();
    b.load_pos = load_pos.data();
    b.counters = counters.data();
    cuda::swap_in_v2(b);
    CHECK(slot_of == steps[j].slot_of);
    CHECK(load_slot == steps[j].loads);
    CHECK(slot_pos == steps[j].slot_pos);
    CHECK(counters == steps[j].counters);
  }
}

TEST_CASE("cuda v2: both coordinators' evicted ranges, row for row against cpu_ref over three steps") {
  // H 8, K 4, page 4, n 21: prefix E = 20 in radix nodes of 8, eviction demand 12 (tests/cpu_ref/
  // test_hisparse_v2_session.cpp). Row 0 current: [8, 20) on the host; row 1 older: [0, 20).
  // Step 0, T = [20, 3, 9, 15] on both rows: row 0 loads 9, 15 into slots 0, 1 (20 and 3 resident: slot_of
  // [8, 8, 0, 1]); row 1 loads 3, 9, 15 into 0, 1, 2 ([8, 0, 1, 2]). Steps 1 and 2 (T = [3, 9, 10, 21], then
  // [0, 15, 11, 22]) are checked against the reference: hits on what step 0 loaded, more head positions resident.
  const int32_t R = 2, K = 4, H = 8;
  const std::vector<int32_t> end = {20, 20};
  const std::vector<int32_t> begin = {v2_evicted_begin(20, 8, 12, V2Coordinator::kCurrent),
                                      v2_evicted_begin(20, 8, 12, V2Coordinator::kOlder)};
  REQUIRE(begin == std::vector<int32_t>{8, 0});
  const std::vector<std::vector<int32_t>> T = {{20, 3, 9, 15}, {3, 9, 10, 21}, {0, 15, 11, 22}};
  std::vector<int32_t> gpu_pos(size_t(R) * H, -1), cpu_pos = gpu_pos;
  cpu_ref::SwapInScratch scratch;
  for (size_t j = 0; j < T.size(); ++j) {
    INFO("step " << j);
    std::vector<int32_t> sel, slot_of(size_t(R) * K), load_slot(size_t(R) * K), load_pos(size_t(R) * K);
    std::vector<int64_t> counters(size_t(R) * cuda::kSwapInV2CounterWords);
    for (int32_t b = 0; b < R; ++b) sel.insert(sel.end(), T[j].begin(), T[j].end());
    cuda::SwapInV2Batch batch;
    batch.rows = R;
    batch.top_k = K;
    batch.H = H;
    batch.selected = sel.data();
    batch.evicted_end = end.data();
    batch.evicted_begin = begin.data();
    batch.slot_pos = gpu_pos.data();
    batch.slot_of = slot_of.data();
    batch.load_slot = load_slot.data();
    batch.load_pos = load_pos.data();
    batch.counters = counters.data();
    cuda::swap_in_v2(batch);
    for (int32_t b = 0; b < R; ++b) {
      INFO("row " << b << (b == 0 ? " (current)" : " (older)"));
      SwapInPlan plan;
      const cpu_ref::SwapInV2Step in{T[j].data(), K, 21 + static_cast<int32_t>(j), K, end[b], 4, nullptr, 1,
                                     begin[b]};
      cpu_ref::swap_in_v2({cpu_pos.data() + size_t(b) * H, H}, in, {b, 0, static_cast<int64_t>(j)}, plan, scratch);
      CHECK(std::vector<int32_t>(slot_of.begin() + b * K, slot_of.begin() + (b + 1) * K) == plan.slot_of);
      const int64_t* c = counters.data() + size_t(b) * cuda::kSwapInV2CounterWords;
      CHECK(c[1] == plan.counters.newest_hits);
      CHECK(c[2] == plan.counters.hits);
      CHECK(c[3] == plan.counters.misses);
      for (size_t m = 0; m < plan.load_slot.size(); ++m) CHECK(load_slot[size_t(b) * K + m] == plan.load_slot[m]);
    }
    CHECK(gpu_pos == cpu_pos);
    if (j == 0) {
      CHECK(std::vector<int32_t>(slot_of.begin(), slot_of.begin() + K) == std::vector<int32_t>{8, 8, 0, 1});
      CHECK(std::vector<int32_t>(slot_of.begin() + K, slot_of.end()) == std::vector<int32_t>{8, 0, 1, 2});
    }
  }
}

// Its rows alternate the coordinators: even rows older (whole prefix), odd rows current (gate and leaf-first tails).
TEST_CASE("cuda v2: validate --only swap-in-v2 over 400 random cases and a generated trace, 0 mismatches") {
  cpu_ref::CpuBackend ref;
  cuda::CudaBackend dut;
  validation::ValidateOptions o;
  o.cases = 400;
  o.seed = 9;
  o.trace = "gen:tiny";
  std::vector<validation::OpReport> reports;
  validation::validate_swap_in_v2({ref, dut, o}, reports);
  REQUIRE(reports.size() == 3);  // random, trace at two buffer sizes
  for (const auto& r : reports) {
    INFO(r.variant << ": " << r.first_mismatch);
    CHECK(r.cases > 0);
    CHECK(r.mismatched_cases == 0);
  }
}
