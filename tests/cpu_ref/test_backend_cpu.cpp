// @brief CpuBackend: the batched interface over the single-row reference (docs/swap_in.md worked examples, padded
// rows, copies, error reporting after all rows ran).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "cpu_ref/backend_cpu.h"

using namespace hisparse;

TEST_CASE("CpuBackend swap_in: docs/swap_in.md examples in one batch, a padded row untouched, loads copied") {
  // Row 0: slot_token [1,4,2,5], n = 8, T = [4,6,7] -> slots [1,0,4], lru [2,3,0,1], one load token 6 -> slot 0.
  // Row 1: padded (n = 0): nothing changes, outputs -1.
  // Row 2: fast path n = 3, T = [2,0,1] -> slots [2,0,1].
  const int32_t B = 3, H = 4, K = 3, rb = 16;
  std::vector<int32_t> st = {1, 4, 2, 5, 9, 9, 9, 9, 0, 1, 2, 3};
  std::vector<int32_t> lru = {0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3};
  const std::vector<int32_t> sel = {4, 6, 7, 1, 2, 3, 2, 0, 1};
  const std::vector<int32_t> n = {8, 0, 3};
  std::vector<uint8_t> host(16 * rb), kv(B * (H + 1) * rb, 0xEE);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i / rb + 1);
  SwapInBatchView v;
  v.batch = B;
  v.H = H;
  v.top_k = K;
  v.slot_token = st.data();
  v.lru = lru.data();
  v.selected = sel.data();
  v.seq_len = n.data();
  v.row_bytes = rb;
  v.host_pool = host.data();
  v.host_rows = 16;
  v.device_kv = kv.data();
  cpu_ref::CpuBackend cpu;
  SwapInBatchResult r;
  cpu.swap_in(v, r);
  CHECK(r.slot_of == std::vector<int32_t>{1, 0, 4, -1, -1, -1, 2, 0, 1});
  CHECK(std::vector<int32_t>(st.begin(), st.begin() + 4) == std::vector<int32_t>{6, 4, 2, 5});
  CHECK(std::vector<int32_t>(lru.begin(), lru.begin() + 4) == std::vector<int32_t>{2, 3, 0, 1});
  CHECK(std::vector<int32_t>(st.begin() + 4, st.end()) == std::vector<int32_t>{9, 9, 9, 9, 0, 1, 2, 3});
  CHECK(std::vector<int32_t>(lru.begin() + 4, lru.end()) == std::vector<int32_t>{3, 2, 1, 0, 0, 1, 2, 3});
  CHECK(r.load_count == std::vector<int32_t>{1, 0, 0});
  CHECK(r.load_host[0] == 6);
  CHECK(r.load_slot[0] == 0);
  CHECK(r.counters[0].misses == 1);
  CHECK(r.counters[0].newest_hits == 1);
  CHECK(r.counters[2].fast_path);
  CHECK(kv[0] == 7);     // row 0 slot 0 now holds host row 6 (bytes = 6 + 1)
  CHECK(kv[rb] == 0xEE);  // slot 1 untouched
}

TEST_CASE("CpuBackend swap_in: an invalid row is reported after the valid rows ran, its state unchanged") {
  const int32_t B = 2, H = 4, K = 2;
  std::vector<int32_t> st = {1, 4, 2, 5, 1, 4, 2, 5};
  std::vector<int32_t> lru = {0, 1, 2, 3, 0, 1, 2, 3};
  const std::vector<int32_t> sel = {4, 4, 6, -1};  // row 0 duplicates token 4
  const std::vector<int32_t> n = {8, 8};
  SwapInBatchView v;
  v.batch = B;
  v.H = H;
  v.top_k = K;
  v.slot_token = st.data();
  v.lru = lru.data();
  v.selected = sel.data();
  v.seq_len = n.data();
  v.row_bytes = 16;
  cpu_ref::CpuBackend cpu;
  SwapInBatchResult r;
  CHECK_THROWS_AS(cpu.swap_in(v, r), Error);
  CHECK(std::vector<int32_t>(st.begin(), st.begin() + 4) == std::vector<int32_t>{1, 4, 2, 5});
  CHECK(std::vector<int32_t>(st.begin() + 4, st.end()) == std::vector<int32_t>{6, 4, 2, 5});  // row 1 ran
}

TEST_CASE("CpuBackend swap_in: a load from outside the host pool leaves its row untouched; later rows still run") {
  // Both rows: slot_token [1,4,2,5], n = 8, T = [6, 7]: token 6 misses (load), 7 is the newest. Row 0's token 6
  // lives at host row 99 of a 16-row pool (the contract: checked before the row's state changes, as on the GPU);
  // row 1's at host row 3. Row 1 must still be processed and copied, then the error names row 0's request.
  const int32_t B = 2, H = 4, K = 2, rb = 16, stride = 8;
  std::vector<int32_t> st = {1, 4, 2, 5, 1, 4, 2, 5};
  std::vector<int32_t> lru = {0, 1, 2, 3, 0, 1, 2, 3};
  const std::vector<int32_t> sel = {6, 7, 6, 7};
  const std::vector<int32_t> n = {8, 8};
  std::vector<int64_t> host_loc(size_t(B) * stride, 0);
  host_loc[6] = 99;
  host_loc[stride + 6] = 3;
  std::vector<uint8_t> host(16 * rb), kv(size_t(B) * (H + 1) * rb, 0xEE);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i / rb + 1);
  const std::vector<int64_t> request = {40, 41};
  SwapInBatchView v;
  v.batch = B;
  v.H = H;
  v.top_k = K;
  v.slot_token = st.data();
  v.lru = lru.data();
  v.selected = sel.data();
  v.seq_len = n.data();
  v.host_loc = host_loc.data();
  v.host_loc_stride = stride;
  v.row_bytes = rb;
  v.host_pool = host.data();
  v.host_rows = 16;
  v.device_kv = kv.data();
  v.request = request.data();
  cpu_ref::CpuBackend cpu;
  SwapInBatchResult r;
  CHECK_THROWS_WITH_AS(cpu.swap_in(v, r), doctest::Contains("request 40"), Error);
  CHECK(std::vector<int32_t>(st.begin(), st.begin() + 4) == std::vector<int32_t>{1, 4, 2, 5});
  CHECK(std::vector<int32_t>(lru.begin(), lru.begin() + 4) == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(kv[0] == 0xEE);  // nothing copied into row 0
  CHECK(r.load_count[0] == 0);
  CHECK(r.load_count[1] == 1);
  CHECK(st[4 + r.load_slot[size_t(K)]] == 6);  // row 1 loaded token 6 …
  CHECK(kv[size_t(H + 1) * rb + size_t(r.load_slot[size_t(K)]) * rb] == 4);  // … from host row 3 (bytes 3 + 1)
}
