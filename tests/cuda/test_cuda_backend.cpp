// @brief CudaBackend against the CPU reference: the swap-in contract's worked examples step by step, invalid input
// rejected with the state unchanged, every swap-in kernel variant (cuda/kernel_config.h) over random batches, and
// `hisparse validate` over 300 random cases per operation (swap-in, gather, backup) plus a generated trace.
// Without a GPU the binary reports SKIPPED (tests/cuda/cuda_test_main.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/backend_cpu.h"
#include "cuda/backend_cuda.h"
#include "cuda/kernel_config.h"
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

TEST_CASE("cuda swap_in: every kernel variant equals the CPU reference over random batches of 1 to 72 rows") {
  // Each variant of cuda/kernel_config.h takes a different kernel or launch path at some batch size; all must give
  // the CPU reference's bits: slots, load lists, state and the copied rows.
  const char* variants[] = {"default", "swap_in.cluster=0", "swap_in.cluster=1", "swap_in.cluster=2",
                            "swap_in.cluster=16", "swap_in.cluster_max_batch=-1", "swap_in.large_batch_cluster=1",
                            "swap_in.table_bits=0", "swap_in.table_bits=2", "swap_in.pdl=0",
                            "swap_in.phase_timer=1"};
  const int32_t H = 96, K = 32, n = 400;
  std::mt19937_64 rng(17);
  for (const std::string spec : variants) {
    CAPTURE(spec);
    cuda::CudaBackend gpu(cuda::parse_kernel_config(spec));
    cpu_ref::CpuBackend cpu;
    for (int32_t B : {1, 3, 8, 9, 40, 72}) {
      CAPTURE(B);
      Batch g{B, H, K, std::vector<int32_t>(size_t(B) * H, -1), std::vector<int32_t>(size_t(B) * H), {},
              std::vector<int32_t>(B, n), std::vector<uint8_t>(size_t(n) * 16), std::vector<uint8_t>(size_t(B) * (H + 1) * 16)};
      for (size_t i = 0; i < g.lru.size(); ++i) g.lru[i] = int32_t(i % H);
      for (size_t i = 0; i < g.host.size(); ++i) g.host[i] = uint8_t(rng());
      Batch c = g;
      std::vector<int32_t> tokens(n);
      for (int step = 0; step < 4; ++step) {
        g.sel.assign(size_t(B) * K, -1);
        for (int32_t b = 0; b < B; ++b) {
          // A window that drifts step to step (hits and misses both), with padding sprinkled in.
          for (int32_t t = 0; t < n; ++t) tokens[t] = t;
          std::shuffle(tokens.begin(), tokens.begin() + 120 + 40 * step, rng);
          for (int32_t j = 0; j < K; ++j) g.sel[size_t(b) * K + j] = rng() % 8 == 0 ? -1 : tokens[j];
        }
        c.sel = g.sel;
        SwapInBatchResult rg, rc;
        gpu.swap_in(g.view(), rg);
        cpu.swap_in(c.view(), rc);
        REQUIRE(rg.slot_of == rc.slot_of);
        REQUIRE(rg.load_count == rc.load_count);
        for (int32_t b = 0; b < B; ++b)  // entries past a row's load_count are unspecified
          for (int32_t m = 0; m < rc.load_count[b]; ++m) {
            REQUIRE(rg.load_host[size_t(b) * K + m] == rc.load_host[size_t(b) * K + m]);
            REQUIRE(rg.load_slot[size_t(b) * K + m] == rc.load_slot[size_t(b) * K + m]);
          }
        REQUIRE(g.st == c.st);
        REQUIRE(g.lru == c.lru);
        REQUIRE(g.kv == c.kv);
      }
    }
  }
}

TEST_CASE("cuda: a retired kernel environment variable is refused, not ignored") {
  setenv("HISPARSE_SWAP_IN_CLUSTER", "4", 1);
  CHECK_THROWS_WITH_AS(cuda::CudaBackend(), doctest::Contains("no longer read"), Error);
  unsetenv("HISPARSE_SWAP_IN_CLUSTER");
}
