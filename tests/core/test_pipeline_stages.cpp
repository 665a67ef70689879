// @brief Pipeline parallelism's layer split and memory budget, worked by hand: SGLang's get_pp_indices split, the
// binding stage, the stage model's sliced layer lists and the budget of a PP2-TP8 deployment against its arithmetic;
// a pp that does not match the GPUs is refused naming the field.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/memory_budget.h"
#include "core/pipeline_stages.h"
#include "core/scenario_loader.h"
#include "tests/error_of.h"

using namespace hisparse;

TEST_CASE("pipeline stages: SGLang's split, floor(layers / pp) per stage and the remainder on the last") {
  ModelSpec m;
  m.name = "toy";
  m.layers = 61;
  m.mtp_layers = 1;
  // Expected: pp 2 gives 30 and 31 layers, the MTP layer with the last; pp 4 gives 15, 15, 15 and 16 (61 = 4 × 15 + 1).
  const auto two = pipeline_stages(m, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].first_layer == 0);
  CHECK(two[0].end_layer == 30);
  CHECK(two[0].kv_layers() == 30);
  CHECK(two[1].first_layer == 30);
  CHECK(two[1].end_layer == 61);
  CHECK(two[1].kv_layers() == 32);
  const auto four = pipeline_stages(m, 4);
  REQUIRE(four.size() == 4);
  for (int i = 0; i < 3; ++i) CHECK(four[i].end_layer - four[i].first_layer == 15);
  CHECK(four[3].end_layer - four[3].first_layer == 16);
  // The binding stage is the one with the most KV layers: the last, 31 + 1 MTP.
  CHECK(binding_stage(m, 2).index == 1);
  CHECK(binding_stage(m, 4).index == 3);
  // Expected: more stages than layers is refused, naming pp.
  CHECK(test::error_of([&] { pipeline_stages(m, 62); }).find("decode.pp: got 62") != std::string::npos);
}

TEST_CASE("pipeline stages: the stage model keeps each layer's role (compress ratios, top-k anchors, dense layers)") {
  const Scenario s = load_scenario("dsv4-pro-16xh20-pp2-tp8");
  const ModelSpec& m = s.model;
  const PipelineStage st = binding_stage(m, 2);
  const ModelSpec sm = stage_model(m, st);
  // Expected by hand: DeepSeek-V4-Pro's C4 layers are the even layers 2..60 and its C128 layers 0, 1 and the odd
  // ones to 59; layers [30, 61) hold the even 30..60 (16 C4) and the odd 31..59 (15 C128), and the MTP entry follows.
  CHECK(sm.layers == 31);
  CHECK(sm.mtp_layers == 1);
  CHECK(sm.compress_ratios.size() == 32);
  CHECK(sm.compressed_layer_count(4) == 16);
  CHECK(sm.compressed_layer_count(128) == 15);
  CHECK(sm.compress_ratios.back() == m.compress_ratios.back());
  // Weights in proportion to KV layers: 32 of 62.
  CHECK(sm.weight_bytes == doctest::Approx(m.weight_bytes * 32.0 / 62.0));
  // A top-k schedule keeps its anchors: GLM-5.2-style freq 4, offset 3 anchors 0, 1, 2, 6, 10, ...; layer 30 of the
  // model (anchor iff (30 − 3 + 1) mod 4 = 0: 28, yes) is layer 0 of a stage starting there.
  ModelSpec g = m;
  g.compress_ratios.clear();
  g.layers = 78;
  g.topk_layer_group = 4;
  g.topk_skip_offset = 3;
  PipelineStage tail;
  tail.first_layer = 30;
  tail.end_layer = 78;
  const ModelSpec gs = stage_model(g, tail);
  for (int l = 0; l < gs.layers; ++l) {
    CAPTURE(l);
    CHECK(gs.is_topk_anchor(l) == g.is_topk_anchor(l + 30));
  }
}

TEST_CASE("pipeline stages: a PP2-TP8 budget is its binding stage's, weights and KV per stage") {
  const Scenario s = load_scenario("dsv4-pro-16xh20-pp2-tp8");
  REQUIRE(s.deployment.decode.pp == 2);
  const MemoryBudget b = compute_memory_budget(s, {262144});
  // Expected by hand: the stage holds 31 + 1 MTP layers; its weights are 32 / 62 of the checkpoint, spread over its 8
  // GPUs (no attention DP: the replicated part is sharded too, (W − R) / 8 + R × 1 / 8 = W / 8).
  CHECK(b.kv_layers.value == 32);
  CHECK(b.kv_layers.formula.find("pipeline stage 2 of 2: layers [30, 61)") != std::string::npos);
  CHECK(b.weights_per_gpu_bytes.value == doctest::Approx(s.model.weight_bytes * 32.0 / 62.0 / 8.0));
  CHECK(b.kv_budget_bytes.value ==
        doctest::Approx(s.hardware.hbm_bytes * s.deployment.mem_fraction_static - b.weights_per_gpu_bytes.value));
  // The pools are the stage scenario's: the same budget as a TP8 deployment of the stage's model on 8 GPUs.
  Scenario stage = s;
  stage.model = stage_model(s.model, binding_stage(s.model, 2));
  stage.deployment.decode.pp = 1;
  stage.deployment.decode.gpus = 8;
  const MemoryBudget sb = compute_memory_budget(stage, {262144});
  CHECK(b.full_pool_tokens.value == sb.full_pool_tokens.value);
  // And a stage's KV per token is about half the whole model's, so PP2-TP8 holds more tokens than TP16 would on the
  // same weights per GPU: pools of the binding stage exceed those of one TP8 group holding every layer.
  Scenario whole = s;
  whole.deployment.decode.pp = 1;
  whole.deployment.decode.gpus = 8;
  const MemoryBudget wb = compute_memory_budget(whole, {262144});
  CHECK(b.full_pool_tokens.value > wb.full_pool_tokens.value);
}

TEST_CASE("pipeline stages: a pp that does not match the GPUs is refused naming file, field and value") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hisparse_pp_test";
  std::filesystem::create_directories(dir);
  const std::string src = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/deployments/dsv4-pro-16xh20-pp2-tp8.yaml";
  std::ifstream in(src);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("  pp: 2");
  REQUIRE(at != std::string::npos);
  text.replace(at, 7, "  pp: 4");
  text.replace(text.find("model: deepseek-v4-pro-fp8"), 26,
               "model: " + std::string(HISPARSE_SOURCE_DIR) + "/scenarios/models/deepseek-v4-pro-fp8.yaml");
  text.replace(text.find("hardware: h20-3e"), 16,
               "hardware: " + std::string(HISPARSE_SOURCE_DIR) + "/scenarios/hardware/h20-3e.yaml");
  const std::string path = (dir / "pp4.yaml").string();
  std::ofstream(path) << text;
  // Expected: 16 GPUs with tp 8 and pp 4 is not tp × pp; the message names pp, its value and the rule.
  const std::string err = test::error_of([&] { load_scenario(path); });
  CHECK(err.find("pp: got 4 with gpus 16 and tp 8, expected gpus = tp × pp (32)") != std::string::npos);
  std::filesystem::remove_all(dir);
}
