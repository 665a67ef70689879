// @brief Per-op weight precision on MLA models: expert_weight_bytes_per_param and dense_weight_bytes_per_param load
// on an MLA (DSA) model file, and a value out of range or experts on a model without any are refused naming the
// file, the field and the value; files that leave them out keep both at 0 (the FP8 checkpoints' cost-model default).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

const std::string kMlaBase =
    "layers: 4\nkv_lora_rank: 512\nqk_rope_head_dim: 64\nindexer_heads: 4\nindexer_head_dim: 128\n"
    "attention_heads: 8\ntop_k: 64\nweight_bytes: 1e9\nhidden_size: 512\nrouted_experts: 8\nexperts_per_token: 2\n"
    "moe_intermediate_size: 128\n";

fs::path write_model(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_tmp" / "mla_precision";
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::string& name, const std::string& text) {
  try {
    load_model_spec(write_model(name, text).string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("mla models: per-op weight precision loads (NVFP4 experts, bf16 attention)") {
  // NVFP4: 4-bit values plus one fp8 scale per 16 = 0.5 + 1/16 = 0.5625 bytes per parameter; bf16 attention 2.
  const ModelSpec m = load_model_spec(
      write_model("nvfp4", kMlaBase + "expert_weight_bytes_per_param: 0.5625\ndense_weight_bytes_per_param: 2\n").string());
  CHECK_FALSE(m.is_gqa());
  CHECK(m.expert_weight_bytes_per_param == doctest::Approx(0.5625));
  CHECK(m.dense_weight_bytes_per_param == doctest::Approx(2.0));
  // Left out: both stay 0, so the cost model keeps its own weight_bytes_per_param and fp8 projections.
  const ModelSpec plain = load_model_spec(write_model("plain", kMlaBase).string());
  CHECK(plain.expert_weight_bytes_per_param == 0);
  CHECK(plain.dense_weight_bytes_per_param == 0);
  // The shipped NVFP4 file says so too; its checkpoint size is its own, not the FP8 file's.
  const ModelSpec nv = load_model_spec(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/models/glm-5.1-nvfp4.yaml");
  const ModelSpec fp8 = load_model_spec(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/models/glm-5.yaml");
  CHECK(nv.expert_weight_bytes_per_param == doctest::Approx(0.5625));
  CHECK(nv.dense_weight_bytes_per_param == doctest::Approx(2.0));
  CHECK(nv.weight_bytes < 0.6 * fp8.weight_bytes);
  CHECK(nv.layers == fp8.layers);
}

TEST_CASE("mla models: a precision out of range or experts on an expert-less model name file, field and value") {
  std::string e = error_of("bad_expert", kMlaBase + "expert_weight_bytes_per_param: 8\n");
  CHECK(e.find("bad_expert.yaml") != std::string::npos);
  CHECK(e.find("expert_weight_bytes_per_param") != std::string::npos);
  CHECK(e.find("8") != std::string::npos);
  e = error_of("bad_dense", kMlaBase + "dense_weight_bytes_per_param: 0.1\n");
  CHECK(e.find("bad_dense.yaml") != std::string::npos);
  CHECK(e.find("dense_weight_bytes_per_param") != std::string::npos);
  CHECK(e.find("0.1") != std::string::npos);
  std::string no_experts = kMlaBase;
  no_experts.replace(no_experts.find("routed_experts: 8\nexperts_per_token: 2\n"), 38, "");
  e = error_of("no_experts", no_experts + "expert_weight_bytes_per_param: 0.5625\n");
  CHECK(e.find("no_experts.yaml") != std::string::npos);
  CHECK(e.find("expert_weight_bytes_per_param") != std::string::npos);
  CHECK(e.find("0.5625") != std::string::npos);
  CHECK(e.find("no routed experts") != std::string::npos);
}
