// @brief The memory budget plan, simulate and advise read for DeepSeek-V4 (core/dsv4_pool_budget.h
// dsv4_memory_budget): the DSV4 pools with HiSparse off and on, the request capacity of each mode at 128K with the
// derivation by hand, the NVFP4 KV dtype, and the shipped V4-Pro deployment.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/dsv4_pool_budget.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

/// A shipped deployment with one text replacement, written next to the test's scratch models.
Scenario deployment_with(const std::string& deployment, const std::string& name, const std::string& from,
                         const std::string& to) {
  std::ifstream in(fs::path(HISPARSE_SOURCE_DIR) / "scenarios" / "deployments" / (deployment + ".yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "dsv4_budget" / "deployments";
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return load_scenario(p.string());
}

}  // namespace

TEST_CASE("dsv4 budget: dsv4-flash-8xh200 capacity at 128K by hand, full KV and HiSparse") {
  const MemoryBudget b = compute_memory_budget(load_scenario("dsv4-flash-8xh200"), {131072});
  REQUIRE(b.attention == "dsv4");
  // HiSparse off (shrink 1): bytes per full token (0.1 × 584 × 43 + 584 × 21 / 4 + 584 × 20 / 128 + 132 × 21 / 4
  // + 0.1 × 16 / 128 × 10,240 × 21) × 44 / 43 = 9,049.45 × 44 / 43 = 9,259.90; full = floor((103,704,097,081.6 −
  // 1,394,606,080) / 9,259.90 / 256) × 256 = 11,048,448; window pool floor(1,104,844 / 256) × 256 = 1,104,640.
  CHECK(b.full_pool_tokens.value == 11048448);
  CHECK(b.swa_pool_tokens.value == 1104640);
  // HiSparse on: the pools of tests/core/test_dsv4_pool_budget.cpp (full 15,156,736, window 1,515,520, C4 device
  // 757,836 entries, C4 host 3,789,184 entries); the buffer Q = 1024 + 256 / 4 = 1,088 entries.
  CHECK(b.logical_pool_tokens.value == 15156736);
  CHECK(b.hisparse_swa_pool_tokens.value == 1515520);
  CHECK(b.device_pool_tokens.value == 757836);
  CHECK(b.host_pool_tokens.value == 3789184);
  CHECK(b.device_buffer_tokens.value == 1088);
  // A 131,072-token request on a PD decode server (num_reserved_decode_tokens 512): paged 131,072, 32,768 C4
  // entries, window tokens paged(min(131,072, 128 + 256)) = 512.
  // Full KV: min(floor((11,048,448 + 512) / (131,072 + 512)) = 83, floor((1,104,640 + 512) / (512 + 512)) = 1,079)
  // = 83 requests per rank.
  const Dsv4RequestLimits f = dsv4_request_limits(b, 131072, false);
  CHECK(f.c4_entries == 32768);
  CHECK(f.swa_tokens == 512);
  CHECK(f.hbm == 83);
  // HiSparse: C4 device floor(757,836 / 1,088) = 696 and window floor((1,515,520 + 512) / 1,024) = 1,480 → hbm 696;
  // logical floor((15,156,736 + 512) / 131,584) = 115; C4 host floor(3,789,184 / 32,768) = 115.
  const Dsv4RequestLimits h = dsv4_request_limits(b, 131072, true);
  CHECK(h.device_slots == 1088);
  CHECK(h.hbm == 696);
  CHECK(h.logical == 115);
  CHECK(h.host == 115);
  // The deployment caps both at max_running_requests 64.
  CHECK(b.per_seq_len[0].max_requests_full.value == 64);
  CHECK(b.per_seq_len[0].max_requests_hisparse.value == 64);
  // Bytes per request: window 512 × 43 × 584 + C128 1,024 × 20 × 584 + C4 states 512 / 128 × 16 × 10,240 × 21
  // + C128 states 256 × 4,096 × 20 = 12,857,344 + 11,960,320 + 13,762,560 + 20,971,520 = 59,551,744 on the GPU in
  // both modes; indexer 32,768 × 21 × 132 = 90,832,896; C4 entries 32,768 × 21 × 584 = 401,866,752 (full KV) or
  // 1,088 × 21 × 584 = 13,343,232 (HiSparse buffer).
  CHECK(b.per_seq_len[0].full_kv_bytes.value == 59551744.0 + 90832896.0 + 401866752.0);
  CHECK(b.per_seq_len[0].hisparse_hbm_bytes.value == 59551744.0 + 90832896.0 + 13343232.0);
  CHECK(b.per_seq_len[0].hisparse_host_bytes.value == 401866752.0);
}

TEST_CASE("dsv4 budget: a short request fits the buffer; the reserve and the window pool bind as in requests_in_pool") {
  const MemoryBudget b = compute_memory_budget(load_scenario("dsv4-flash-8xh200"), {2048});
  // 2,048 tokens = 512 C4 entries ≤ H = 1,024: the request holds its 512 entries, not the whole buffer.
  const Dsv4RequestLimits h = dsv4_request_limits(b, 2048, true);
  CHECK(h.device_slots == 512);
  CHECK(h.hbm == std::min<int64_t>(757836 / 512, (1515520 + 512) / (512 + 512)));
}

TEST_CASE("dsv4 budget: NVFP4 KV rows (416 B main, 132 B indexer) and its refusal elsewhere") {
  const Scenario s = deployment_with("dsv4-flash-8xh200", "dsv4_nvfp4", "kv_dtype: fp8", "kv_dtype: nvfp4");
  CHECK(s.deployment.kv_dtype == KvDtype::kNvfp4);
  const Dsv4PoolBudget v = compute_dsv4_pool_budget(s);
  // Sliding-window term 0.1 × 416 × 43 = 1,788.8; C4 (HiSparse) 416 × 21 / 20 = 436.8; the indexer stays 132 B.
  CHECK(v.kv_row_bytes.value == 416);
  CHECK(v.swa_term.value == doctest::Approx(1788.8));
  CHECK(v.c4_term.value == doctest::Approx(436.8));
  CHECK(v.indexer_key_bytes.value == 132);
  // Smaller rows, more tokens than fp8's 15,156,736.
  CHECK(v.full_tokens.value > 15156736);
  // A model without a published NVFP4 row is refused, naming the field, the value and what was expected.
  try {
    deployment_with("dsv32-8xh200-1tb", "dsv32_nvfp4", "kv_dtype: bf16", "kv_dtype: nvfp4");
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("kv_dtype: got nvfp4, expected bf16 or fp8") != std::string::npos);
    CHECK(m.find("latent_row_bytes_nvfp4") != std::string::npos);
  }
  // An unknown dtype names the accepted ones.
  try {
    deployment_with("dsv4-flash-8xh200", "dsv4_fp6", "kv_dtype: fp8", "kv_dtype: fp6");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("nvfp4") != std::string::npos);
  }
}

TEST_CASE("dsv4 budget: the shipped V4-Pro deployment fits its weights and keeps KV room") {
  const MemoryBudget b = compute_memory_budget(load_scenario("dsv4-pro-8xb200"), {131072});
  // Weights per GPU (872e9 − 17.4e9) / 8 + 17.4e9 = 124.225 GB of B200's 192.27 GB × 0.85 = 163.43 GB: 39.2 GB
  // for KV.
  CHECK(b.weights_per_gpu_bytes.value == doctest::Approx(124.225e9));
  CHECK(b.kv_budget_bytes.value == doctest::Approx(192265846784.0 * 0.85 - 124.225e9));
  CHECK(b.c4_layers == 30);
  CHECK(b.c128_layers == 31);
  CHECK(b.per_seq_len[0].max_requests_hisparse.value >= b.per_seq_len[0].max_requests_full.value);
  CHECK(b.per_seq_len[0].max_requests_full.value > 0);
}
