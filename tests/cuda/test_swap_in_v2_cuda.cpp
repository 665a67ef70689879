// @brief The HiSparse V2 swap-in kernel (cuda/swap_in_v2.h) against cpu_ref::swap_in_v2: the hand-worked steps of
// tests/cpu_ref/test_swap_in_v2.cpp (free slot, stale slot, resident page) on the GPU, and the validation library's
// swap-in-v2 operation over random cases and a generated trace. Without a GPU the binary reports SKIPPED.
#include <doctest/doctest.h>

#include <vector>

#include "cpu_ref/backend_cpu.h"
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
