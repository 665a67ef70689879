// @brief GQA / MHA and sliding-window model files: the shipped ones load with their config.json shapes, and every bad
// field is refused naming the file, the field, the value and what was expected; old MLA files load unchanged.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

const char* kGqaBase =
    "attention: gqa\nlayers: 4\nattention_heads: 8\nnum_key_value_heads: 2\nhead_dim: 64\nhidden_size: 512\n"
    "dense_intermediate_size: 1024\nvocab_size: 1000\nweight_bytes: 1e9\nactive_params: 5e8\n";

fs::path write_model(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "gqa_models";
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::string& name, const std::string& text) {
  const fs::path p = write_model(name, text);
  try {
    load_model_spec(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gqa models: the shipped files carry config.json's shapes") {
  const Scenario l = load_scenario("llama31-8b-1xh100");
  CHECK(l.model.is_gqa());
  CHECK_FALSE(l.model.has_sparse_indexer());
  CHECK(l.model.num_key_value_heads == 8);
  CHECK(l.model.head_dim == 128);
  CHECK(l.model.dense_layers == 32);  // dense: every layer's MLP is config.json's intermediate_size
  CHECK(l.model.sliding_layers.empty());
  CHECK(l.model.full_attention_layer_count() == 32);
  CHECK_FALSE(l.deployment.hisparse_enabled);

  const Scenario g = load_scenario("gptoss-120b-1xh200");
  REQUIRE(g.model.sliding_layers.size() == 36);
  CHECK(g.model.sliding_layers[0]);        // layer_types starts with sliding_attention
  CHECK_FALSE(g.model.sliding_layers[1]);
  CHECK(g.model.sliding_layer_count() == 18);
  CHECK(g.model.routed_experts == 128);
  CHECK(g.model.expert_weight_bytes_per_param == doctest::Approx(0.53125));

  // Old MLA files are untouched by the new fields.
  const Scenario d = load_scenario("dsv32-8xh200-1tb");
  CHECK_FALSE(d.model.is_gqa());
  CHECK(d.model.has_sparse_indexer());
  CHECK(d.model.sliding_layers.empty());
}

TEST_CASE("gqa models: sliding_window_pattern marks every P-th layer global (Gemma-3's 5 local : 1 global)") {
  const fs::path p = write_model("pattern", std::string(kGqaBase).replace(std::string(kGqaBase).find("layers: 4"), 9,
                                                                           "layers: 12") +
                                                "sliding_window: 1024\nsliding_window_pattern: 6\n");
  const ModelSpec m = load_model_spec(p.string());
  REQUIRE(m.sliding_layers.size() == 12);
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK(m.sliding_layers[static_cast<size_t>(i)] == ((i + 1) % 6 != 0));
  }
  CHECK(m.sliding_layer_count() == 10);
  CHECK(m.full_attention_layer_count() == 2);
}

TEST_CASE("gqa models: every bad field names the file, the field, the value and the expectation") {
  const std::string base = kGqaBase;
  // A divisor of the query heads.
  std::string e = error_of("kvh3", std::string(base).replace(base.find("num_key_value_heads: 2"), 22, "num_key_value_heads: 3"));
  CHECK(e.find("kvh3.yaml") != std::string::npos);
  CHECK(e.find("num_key_value_heads") != std::string::npos);
  CHECK(e.find("got 3") != std::string::npos);
  CHECK(e.find("divisor of attention_heads 8") != std::string::npos);
  // More KV heads than query heads.
  e = error_of("kvh16", std::string(base).replace(base.find("num_key_value_heads: 2"), 22, "num_key_value_heads: 16"));
  CHECK(e.find("num_key_value_heads") != std::string::npos);
  CHECK(e.find("16") != std::string::npos);
  // MLA-only keys under gqa.
  e = error_of("mla_key", base + "kv_lora_rank: 512\n");
  CHECK(e.find("mla_key.yaml") != std::string::npos);
  CHECK(e.find("kv_lora_rank") != std::string::npos);
  CHECK(e.find("only for attention: mla") != std::string::npos);
  // GQA-only keys under mla.
  e = error_of("gqa_key", "layers: 2\nkv_lora_rank: 512\nindexer_heads: 4\nindexer_head_dim: 128\nattention_heads: 8\n"
                          "top_k: 64\nweight_bytes: 1e9\nhead_dim: 64\n");
  CHECK(e.find("head_dim") != std::string::npos);
  CHECK(e.find("only for attention: gqa") != std::string::npos);
  // Unknown attention kind.
  e = error_of("kind", std::string(base).replace(0, 14, "attention: mqa"));
  CHECK(e.find("attention") != std::string::npos);
  CHECK(e.find("mqa") != std::string::npos);
  // Missing head_dim.
  e = error_of("nohd", std::string(base).replace(base.find("head_dim: 64\n"), 13, ""));
  CHECK(e.find("head_dim") != std::string::npos);
  // Sliding window without a layout, layout without a window, a wrong-length or misspelled layer_types.
  e = error_of("nolayout", base + "sliding_window: 128\n");
  CHECK(e.find("sliding_window") != std::string::npos);
  CHECK(e.find("layer_types or sliding_window_pattern") != std::string::npos);
  e = error_of("nowindow", base + "sliding_window_pattern: 2\n");
  CHECK(e.find("sliding_window_pattern") != std::string::npos);
  CHECK(e.find("sliding_window > 0") != std::string::npos);
  e = error_of("short", base + "sliding_window: 128\nlayer_types: [sliding_attention, full_attention]\n");
  CHECK(e.find("layer_types") != std::string::npos);
  CHECK(e.find("got 2 entries, expected one per layer (4)") != std::string::npos);
  e = error_of("typo", base + "sliding_window: 128\nlayer_types: [sliding_attention, full_attention, sliding, "
                              "full_attention]\n");
  CHECK(e.find("layer_types[2]") != std::string::npos);
  CHECK(e.find("'sliding'") != std::string::npos);
  e = error_of("allfull", base + "sliding_window: 128\nlayer_types: [full_attention, full_attention, full_attention, "
                                 "full_attention]\n");
  CHECK(e.find("no layer slides") != std::string::npos);
  e = error_of("both", base + "sliding_window: 128\nsliding_window_pattern: 2\nlayer_types: [full_attention, "
                              "full_attention, full_attention, sliding_attention]\n");
  CHECK(e.find("both layer_types and sliding_window_pattern") != std::string::npos);
  // Dense model without its MLP width; MoE fields on a dense model; a dense model's expert bytes.
  e = error_of("nomlp", std::string(base).replace(base.find("dense_intermediate_size: 1024\n"), 29, ""));
  CHECK(e.find("dense_intermediate_size") != std::string::npos);
  e = error_of("densemoe", base + "experts_per_token: 2\n");
  CHECK(e.find("experts_per_token") != std::string::npos);
  CHECK(e.find("expected 0 or absent for a dense model") != std::string::npos);
  e = error_of("moenoi", base + "routed_experts: 8\nexperts_per_token: 2\n");
  CHECK(e.find("moe_intermediate_size") != std::string::npos);
  e = error_of("bpp", base + "dense_weight_bytes_per_param: 8\n");
  CHECK(e.find("dense_weight_bytes_per_param") != std::string::npos);
  CHECK(e.find("8") != std::string::npos);
}

TEST_CASE("gqa deployments: HiSparse on a model without an indexer, and KV heads that do not split, are refused") {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "gqa_deployments";
  fs::create_directories(dir / "deployments");
  std::ofstream(dir / "deployments" / "hs.yaml")
      << "model: llama-3.1-8b\nhardware: h100-sxm\nhost_dram_bytes: 1TB\ndecode: {gpus: 1, tp: 1, dp_attention: 1, ep: 1}\n";
  CHECK_THROWS_WITH_AS(load_scenario((dir / "deployments" / "hs.yaml").string()),
                       doctest::Contains("hisparse_enabled: got true, expected false: model llama-3.1-8b has no sparse "
                                         "indexer"),
                       Error);
  std::ofstream(dir / "deployments" / "tp3.yaml")
      << "model: llama-3.1-8b\nhardware: h100-sxm\nhost_dram_bytes: 1TB\nhisparse_enabled: false\n"
         "decode: {gpus: 3, tp: 3, dp_attention: 1, ep: 1}\n";
  CHECK_THROWS_WITH_AS(load_scenario((dir / "deployments" / "tp3.yaml").string()),
                       doctest::Contains("expected a divisor of the model's num_key_value_heads 8"), Error);
  std::ofstream(dir / "deployments" / "ratio.yaml")
      << "model: gpt-oss-120b\nhardware: h200\nhost_dram_bytes: 1TB\nhisparse_enabled: false\n"
         "decode: {gpus: 1, tp: 1, dp_attention: 1, ep: 1}\nswa_full_tokens_ratio: 1.5\n";
  CHECK_THROWS_WITH_AS(load_scenario((dir / "deployments" / "ratio.yaml").string()),
                       doctest::Contains("swa_full_tokens_ratio"), Error);
  // simulate / advise refuse such a model with a message that says why.
  const Scenario l = load_scenario("llama31-8b-1xh100");
  CHECK_THROWS_WITH_AS(require_sparse_indexer(l, "hisparse simulate"),
                       doctest::Contains("model llama-3.1-8b has gqa attention and no sparse indexer"), Error);
  CHECK_NOTHROW(require_sparse_indexer(load_scenario("dsv32-8xh200-1tb"), "hisparse simulate"));
}

TEST_CASE("hybrid linear-attention model files: the Mamba state shapes come with full_attention_interval") {
  // linear_* keys without full_attention_interval are a mistake, not a no-op.
  CHECK(error_of("hybrid_nointerval", std::string(kGqaBase) + "linear_num_key_heads: 4\n")
            .find("expected full_attention_interval") != std::string::npos);
  // full_attention_interval without the state shapes cannot size a Mamba slot.
  CHECK(error_of("hybrid_noshape", std::string(kGqaBase) + "full_attention_interval: 4\n")
            .find("linear_num_key_heads") != std::string::npos);
  // Every 4th of 4 layers attends: 1 full-attention layer, 3 linear.
  const std::string ok = std::string(kGqaBase) +
                         "full_attention_interval: 4\nlinear_num_key_heads: 4\nlinear_num_value_heads: 8\n"
                         "linear_key_head_dim: 32\nlinear_value_head_dim: 32\nlinear_conv_kernel_dim: 4\n";
  CHECK(error_of("hybrid_ok", ok).empty());
  const ModelSpec m = load_model_spec((fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "gqa_models" / "hybrid_ok.yaml").string());
  CHECK(m.linear_layer_count() == 3);
  CHECK(m.full_attention_layer_count() == 1);
}
