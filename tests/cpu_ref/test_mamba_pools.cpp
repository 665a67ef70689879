// @brief Unit tests: MambaPool, HybridReqToTokenPool (the request → Mamba-slot map: alloc, free, exhaustion) and
// HybridLinearKVPool (KV for the full-attention layers only), with Qwen3-Next's per-layer state sizes.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;
using V = std::vector<int64_t>;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("MambaPool: slot bytes, alloc from the front, free to the back, exhaustion") {
  // Qwen3-Next at TP 1: conv (2 × 16 × 128 + 32 × 128) × (4 − 1) × 2 B = 49,152; SSM 32 × 128 × 128 × 4 B =
  // 2,097,152; 36 linear layers → 36 × 2,146,304 = 77,266,944 B per slot.
  MambaPool pool(3, 36, 49152, 2097152);
  CHECK(pool.bytes_per_slot() == 77266944);
  CHECK(pool.total_bytes() == 3 * 77266944);
  CHECK(pool.alloc(2) == V{0, 1});
  pool.free(0);
  // Freed slots go to the back: 2 comes before 0.
  CHECK(pool.alloc(2) == V{2, 0});
  CHECK(pool.available_size() == 0);
  // Exhausted: an OutOfMemoryError that names the pool, nothing taken.
  CHECK(message_of([&] { pool.alloc(1); }).find("MambaPool") != std::string::npos);
  CHECK(pool.available_size() == 0);
  // Misuse: a slot not in use, out of range.
  pool.free(1);
  CHECK(message_of([&] { pool.free(1); }).find("slot 1 is not in use") != std::string::npos);
  CHECK(message_of([&] { pool.free(7); }).find("out of range") != std::string::npos);
  CHECK(message_of([] { MambaPool(0, 36, 1, 1); }).find("must be positive") != std::string::npos);
}

TEST_CASE("HybridReqToTokenPool: one Mamba slot per request, both taken and returned together") {
  // 4 request slots but only 2 Mamba slots: the Mamba pool bounds the running requests (SGLang caps
  // max_running_requests at max_mamba_cache_size / ratio).
  HybridReqToTokenPool pool(4, 16, MambaPool(2, 1, 0, 8));
  const V reqs = pool.alloc(2);
  CHECK(reqs == V{0, 1});
  CHECK(pool.mamba_index(0) == 0);
  CHECK(pool.mamba_index(1) == 1);
  CHECK(pool.available_size() == 0);
  // A third request: the Mamba pool is short, so no request slot is taken either.
  CHECK(message_of([&] { pool.alloc(1); }).find("Mamba state slots") != std::string::npos);
  CHECK(pool.req_to_token().available_size() == 2);
  // Freeing request 0 returns its Mamba slot 0; the next request gets request slot 2 and Mamba slot 0.
  pool.free(0);
  CHECK_FALSE(pool.mamba().in_use(0));
  const V next = pool.alloc(1);
  CHECK(next == V{2});
  CHECK(pool.mamba_index(2) == 0);
  // The map is per request slot: a freed one has none.
  CHECK(message_of([&] { pool.mamba_index(0); }).find("not in use") != std::string::npos);
  CHECK(message_of([&] { pool.free(0); }).find("not in use") != std::string::npos);
}

TEST_CASE("HybridLinearKVPool: KV only for the full-attention layers") {
  // Qwen3-Next's pattern, 8 layers: three linear then one full attention, twice → full layers 3 and 7.
  const std::vector<bool> full = {false, false, false, true, false, false, false, true};
  // K + V at TP 2: 2 × 1 KV head × 256 × 2 B = 1,024 B per token per layer.
  HybridLinearKVPool kv(1000, full, 1024);
  CHECK(kv.kv_layer_count() == 2);
  CHECK(kv.kv_layer_index(3) == 0);
  CHECK(kv.kv_layer_index(7) == 1);
  // 1,000 tokens × 2 layers × 1,024 B.
  CHECK(kv.total_bytes() == 2048000);
  CHECK(message_of([&] { kv.kv_layer_index(0); }).find("linear-attention layer") != std::string::npos);
  CHECK(message_of([&] { kv.kv_layer_index(8); }).find("out of range") != std::string::npos);
  CHECK(message_of([] { HybridLinearKVPool(10, {false, false}, 1024); }).find("full-attention layers") !=
        std::string::npos);
}
