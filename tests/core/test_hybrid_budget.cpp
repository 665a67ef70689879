// @brief The memory budget of a hybrid attention + linear-attention model (Qwen3-Coder-Next on 2 × H200, TP 2)
// against hand arithmetic: KV for the 12 full-attention layers only, the Mamba state pool SGLang carves out of the
// KV budget first, and the running-request cap its slots set (the model file's refusals: test_model_spec_gqa.cpp).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

TEST_CASE("hybrid: qwen3next-2xh200-tp2 pools by hand") {
  const Scenario s = load_scenario("qwen3next-2xh200-tp2");
  // full_attention_interval 4 over 48 layers: 12 full-attention, 36 linear.
  CHECK(s.model.full_attention_layer_count() == 12);
  CHECK(s.model.linear_layer_count() == 36);
  const MemoryBudget b = compute_memory_budget(s);
  CHECK(b.attention == "gqa+mamba");
  CHECK_FALSE(b.sparse_indexer);
  // KV: attention TP 2 holds max(1, 2 / 2) = 1 KV head; K + V row 2 × 1 × 256 × 2 = 1,024 B; 12 layers → 12,288 B.
  CHECK(b.kv_layers.value == 12);
  CHECK(b.latent_row_bytes.value == 1024);
  CHECK(b.full_cell_bytes.value == 12288);
  // Mamba slot: 36 × (8,192 / 2 × 3 × 2 + 32 / 2 × 128 × 128 × 4) = 36 × (24,576 + 1,048,576) = 38,633,472 B.
  CHECK(b.mamba_state_per_request.value == 38633472);
  // KV budget 150,754,820,096 × 0.85 − 159.35e9 / 2 = 48,466,597,081.6; Mamba share × 0.9 / 1.9 → slots
  // floor(22,957,861,775.5 / 38,633,472) = 594; pool 594 × 38,633,472 = 22,948,282,368 B; cap 594 / 3 = 198.
  CHECK(b.kv_budget_bytes.value == doctest::Approx(48466597081.6));
  CHECK(b.mamba_slots.value == 594);
  CHECK(b.mamba_pool_bytes.value == 22948282368.0);
  CHECK(b.max_requests_by_mamba.value == 198);
  // KV pool: floor((48,466,597,081.6 − 22,948,282,368) / 12,288) = floor(25,518,314,713.6 / 12,288) = 2,076,685.
  CHECK(b.full_pool_tokens.value == 2076685);
  // One 131,072-token request: 131,072 × 12 × 1,024 + 38,633,472 = 1,649,246,208 B; the pool holds
  // floor(2,076,685 / 131,072) = 15 of them (the Mamba cap of 198 does not bind).
  REQUIRE(b.per_seq_len.size() == 4);
  CHECK(b.per_seq_len[3].full_kv_bytes.value == 1649246208.0);
  CHECK(b.per_seq_len[3].max_requests_full.value == 15);
  // Short requests hit the Mamba cap: 16,384 tokens → floor(2,076,685 / 16,384) = 126 < 198; a pinned larger pool
  // lets the cap bind.
  CHECK(full_pool_requests(b, 16384) == 126);
  MemoryBudget big = b;
  big.full_pool_tokens.value = 1e9;
  std::string f;
  CHECK(full_pool_requests(big, 16384, &f) == 198);
  CHECK(f.find("capped by the Mamba slots") != std::string::npos);
}

TEST_CASE("hybrid: an explicit max_mamba_cache_size; the Mamba keys refused on a model without linear layers") {
  const Scenario s = load_scenario("qwen3next-2xh200-tp2");
  Scenario pinned = s;
  pinned.deployment.max_mamba_cache_size = 30;
  const MemoryBudget b = compute_memory_budget(pinned);
  // 30 slots → 30 × 38,633,472 = 1,159,004,160 B; cap 10 requests.
  CHECK(b.mamba_slots.value == 30);
  CHECK(b.mamba_pool_bytes.value == 1159004160.0);
  CHECK(b.max_requests_by_mamba.value == 10);
  // Two slots cannot serve one request (SGLang keeps 3 per running request): refused, naming the pool.
  Scenario tiny = s;
  tiny.deployment.max_mamba_cache_size = 2;
  std::string tiny_msg;
  try {
    compute_memory_budget(tiny);
  } catch (const Error& e) {
    tiny_msg = e.what();
  }
  CHECK(tiny_msg.find("the Mamba pool holds 2 slots") != std::string::npos);
  // The Mamba keys are refused on a deployment whose model has no linear layers.
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "hybrid" / "deployments";
  fs::create_directories(dir);
  std::ifstream in(fs::path(HISPARSE_SOURCE_DIR) / "scenarios" / "deployments" / "qwen3-32b-2xh200-tp2.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir / "q32_mamba.yaml") << text << "mamba_full_memory_ratio: 0.5\n";
  std::string msg;
  try {
    load_scenario((dir / "q32_mamba.yaml").string());
  } catch (const Error& e) {
    msg = e.what();
  }
  CHECK(msg.find("mamba_full_memory_ratio: expected absent") != std::string::npos);
}
