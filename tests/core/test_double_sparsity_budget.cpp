// @brief SGLang's Double Sparsity label pool in the memory budget and the loader's checks, against figures worked by
// hand (the arithmetic is written before each check).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

TEST_CASE("double sparsity: the label pool of llama31-8b-1xh100-dsparse by hand") {
  const Scenario s = load_scenario("llama31-8b-1xh100-dsparse");
  REQUIRE(s.deployment.double_sparsity.enabled);
  // SGLang's server_args defaults, as the deployment gives them.
  CHECK(s.deployment.double_sparsity.heavy_channel_num == 32);
  CHECK(s.deployment.double_sparsity.heavy_token_num == 256);
  const MemoryBudget b = compute_memory_budget(s);
  REQUIRE(b.double_sparse);
  // K + V row = 2 × 8 KV heads × 128 × 2 B = 4,096 B; label row = 8 KV heads × 32 channels × 2 B (bf16) = 512 B.
  CHECK(b.latent_row_bytes.value == 4096);
  CHECK(b.label_row_bytes.value == 512);
  // Label per token, 32 layers: 32 × 512 = 16,384 B. Cell = 32 × (4,096 + 512) = 147,456 B (131,072 without it).
  CHECK(b.label_bytes_per_token.value == 16384);
  CHECK(b.full_cell_bytes.value == 147456);
  // KV budget as llama31-8b-1xh100: 56,632,165,990.4 B; pool = floor(56,632,165,990.4 / 147,456) = 384,061 tokens
  // (432,069 without the label: the label costs 11 % of the KV capacity).
  CHECK(b.full_pool_tokens.value == 384061);
  // Label pool = (384,061 + 1) × 32 × 512 = 6,292,471,808 B (label_buffer's size + 1 rows per layer).
  CHECK(b.label_pool_bytes.value == 6292471808.0);
  CHECK(b.label_pool_bytes.formula.find("(max_total_num_tokens + 1)") != std::string::npos);
  // Per request at 16K: 16,384 × 32 × (4,096 + 512) = 2,415,919,104 B; floor(384,061 / 16,384) = 23 requests.
  REQUIRE(b.per_seq_len.size() == 4);
  CHECK(b.per_seq_len[0].full_kv_bytes.value == 2415919104.0);
  CHECK(b.per_seq_len[0].full_latent_bytes.value == 16384.0 * 32 * 4096);
  CHECK(b.per_seq_len[0].max_requests_full.value == 23);
  // `info` prints every figure with its formula, the label ones among them.
  int label_figures = 0;
  for (const Figure* f : b.figures()) {
    CAPTURE(f->key);
    CHECK_FALSE(f->formula.empty());
    label_figures += f->key.rfind("label", 0) == 0 || f->key == "ds_heavy_channel_num";
  }
  CHECK(label_figures == 4);
  // fp8 KV: label row = 8 × 32 × 1 = 256 B.
  Scenario f = s;
  f.deployment.kv_dtype = KvDtype::kFp8;
  CHECK(compute_memory_budget(f).label_row_bytes.value == 256);
  // Without double_sparsity the plain deployment is unchanged: no label figures, cell 131,072 B.
  const MemoryBudget plain = compute_memory_budget(load_scenario("llama31-8b-1xh100"));
  CHECK_FALSE(plain.double_sparse);
  CHECK(plain.full_cell_bytes.value == 131072);
  CHECK(plain.label_pool_bytes.value == 0);
}

TEST_CASE("double sparsity: the loader refuses MLA models, hybrids and too many channels") {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "double_sparsity";
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << body;
    return (dir / name).string();
  };
  // Expected: an MLA model (DeepSeek-V3.2) with double_sparsity is refused, naming the field and what it needs.
  const std::string mla = write("mla.yaml", "model: deepseek-v3.2\nhardware: h200\nhost_dram_bytes: 1TB\n"
                                            "hisparse_enabled: false\ndouble_sparsity:\n  heavy_channel_num: 32\n");
  CHECK_THROWS_WITH_AS(load_scenario(mla), doctest::Contains("double_sparsity: model deepseek-v3.2 has MLA attention"),
                       Error);
  // Expected: more channels than head_dim (128 for Llama-3.1-8B) is refused.
  const std::string wide = write("wide.yaml", "model: llama-3.1-8b\nhardware: h100-sxm\nhost_dram_bytes: 1TB\n"
                                              "hisparse_enabled: false\ndouble_sparsity:\n  heavy_channel_num: 129\n");
  CHECK_THROWS_WITH_AS(load_scenario(wide), doctest::Contains("expected at most the model's head_dim 128"), Error);
  // Expected: a sliding-window model (gpt-oss) is refused.
  const std::string swa = write("swa.yaml", "model: gpt-oss-120b\nhardware: h200\nhost_dram_bytes: 1TB\n"
                                            "hisparse_enabled: false\ndecode:\n  gpus: 1\n  tp: 1\n  dp_attention: 1\n"
                                            "  ep: 1\ndouble_sparsity: {}\n");
  CHECK_THROWS_WITH_AS(load_scenario(swa), doctest::Contains("has sliding-window layers"), Error);
  // Expected: an unknown channel type names the choices.
  const std::string bad = write("bad.yaml", "model: llama-3.1-8b\nhardware: h100-sxm\nhost_dram_bytes: 1TB\n"
                                            "hisparse_enabled: false\ndouble_sparsity:\n  channel_type: v\n");
  CHECK_THROWS_AS(load_scenario(bad), Error);
  // enabled: false keeps the block but turns the label pool off.
  const std::string off = write("off.yaml", "model: llama-3.1-8b\nhardware: h100-sxm\nhost_dram_bytes: 1TB\n"
                                            "hisparse_enabled: false\ndecode:\n  gpus: 1\n  tp: 1\n  dp_attention: 1\n"
                                            "  ep: 1\ndouble_sparsity:\n  enabled: false\n");
  CHECK_FALSE(compute_memory_budget(load_scenario(off)).double_sparse);
}
