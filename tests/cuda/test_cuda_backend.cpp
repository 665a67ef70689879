// @brief CudaBackend against the CPU reference: the swap-in contract's worked examples step by step, invalid input
// rejected with the state unchanged, and `hisparse validate` over 300 random cases per operation (swap-in, gather,
// backup) plus a generated trace. Without a GPU the binary reports SKIPPED (tests/cuda/cuda_test_main.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/backend_cpu.h"
#include "cuda/backend_cuda.h"
#include "cuda/runtime.h"

using namespace hisparse;

namespace {


struct Batch {
  int32_t B, H, K;
  std::vector<int32_t> st, lru, sel, n;
  std::vector<uint8_t> host, kv;
  SwapInBatchView view() {
    SwapInBatchView v;
    v.batch = B;
    v.H = H;
    v.top_k = K;
    v.slot_token = st.data();
    v.lru = lru.data();
    v.selected = sel.data();
    v.seq_len = n.data();
    v.row_bytes = 16;
    v.host_pool = host.data();
    v.host_rows = static_cast<int64_t>(host.size() / 16);
    v.device_kv = kv.data();
    return v;
  }
};

}  // namespace

TEST_CASE("cuda swap_in: docs/swap_in.md worked examples, step by step") {
  cuda::CudaBackend gpu;
  Batch b{1, 4, 3, {1, 4, 2, 5}, {0, 1, 2, 3}, {4, 2, 7}, {8}, std::vector<uint8_t>(16 * 16), std::vector<uint8_t>(5 * 16)};
  for (size_t i = 0; i < b.host.size(); ++i) b.host[i] = static_cast<uint8_t>(i / 16 + 100);
  SwapInBatchResult r;
  // T = [4, 2, 7] -> slots [1, 2, 4]; lru [0, 3, 1, 2]; no loads.
  gpu.swap_in(b.view(), r);
  CHECK(r.slot_of == std::vector<int32_t>{1, 2, 4});
  CHECK(b.lru == std::vector<int32_t>{0, 3, 1, 2});
  CHECK(r.load_count[0] == 0);
  // then T = [6] (padded to K = 3 with -1) -> slot 0; slot_token [6,4,2,5]; lru [3,1,2,0]; load token 6 -> slot 0.
  b.sel = {-1, 6, -1};
  gpu.swap_in(b.view(), r);
  CHECK(r.slot_of == std::vector<int32_t>{-1, 0, -1});
  CHECK(b.st == std::vector<int32_t>{6, 4, 2, 5});
  CHECK(b.lru == std::vector<int32_t>{3, 1, 2, 0});
  REQUIRE(r.load_count[0] == 1);
  CHECK(r.load_host[0] == 6);
  CHECK(r.load_slot[0] == 0);
  CHECK(b.kv[0] == 106);
  // From the first state, T = [4, 6, 7] -> slots [1, 0, 4]; lru [2, 3, 0, 1].
  b.st = {1, 4, 2, 5};
  b.lru = {0, 1, 2, 3};
  b.sel = {4, 6, 7};
  gpu.swap_in(b.view(), r);
  CHECK(r.slot_of == std::vector<int32_t>{1, 0, 4});
  CHECK(b.lru == std::vector<int32_t>{2, 3, 0, 1});
  CHECK(b.st == std::vector<int32_t>{6, 4, 2, 5});
  // Fast path: n = 3 -> slot i = token i, nothing changes.
  b.st = {0, 1, 2, 3};
  b.lru = {0, 1, 2, 3};
  b.sel = {2, 0, 1};
  b.n = {3};
  gpu.swap_in(b.view(), r);
  CHECK(r.slot_of == std::vector<int32_t>{2, 0, 1});
  CHECK(r.counters[0].fast_path);
  CHECK(r.counters[0].newest_hits == 1);
  CHECK(b.lru == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("cuda swap_in: invalid input is rejected with the row named, state unchanged") {
  cuda::CudaBackend gpu;
  Batch b{1, 4, 3, {1, 4, 2, 5}, {0, 1, 2, 3}, {4, 4, 7}, {8}, std::vector<uint8_t>(16 * 16), std::vector<uint8_t>(5 * 16)};
  SwapInBatchResult r;
  CHECK_THROWS_WITH_AS(gpu.swap_in(b.view(), r), doctest::Contains("twice"), Error);
  b.sel = {4, 8, -1};
  CHECK_THROWS_WITH_AS(gpu.swap_in(b.view(), r), doctest::Contains("out of range"), Error);
  CHECK(b.st == std::vector<int32_t>{1, 4, 2, 5});
  CHECK(b.lru == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("cuda: hisparse validate over 300 random cases per operation and a generated trace, 0 mismatches") {
  // HISPARSE_CLI names the binary when the tests run from a relocated bundle (scripts/gpu_check.sh --prebuilt).
  const char* cli = std::getenv("HISPARSE_CLI");
  const std::string cmd = (cli ? std::string(cli) : std::string(HISPARSE_BINARY_DIR) + "/apps/hisparse") +
                          " validate --backend cuda --cases 300 --seed 7 --trace gen:tiny --only swap-in swap-in-trace gather backup"
                          " > /dev/null";
  CHECK(std::system(cmd.c_str()) == 0);
}
