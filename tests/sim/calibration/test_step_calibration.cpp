// @brief The per-op time models of a decode layer (sim/calibration/step_calibration.h): the work of each op matches what the
// GPU benchmark wrote, the fitter recovers known models, the shipped H200 sweep meets the held-out bar, the YAML
// round-trips, bad CSV or YAML input is refused with the file and line named, and the cost model loads the
// hardware's calibrations by default and charges the fitted models.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/cost/step/decode_cost_model.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"
#include "core/io/text_lines.h"
#include "sim/calibration/step_calibration.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

const std::string kDense = std::string(HISPARSE_SOURCE_DIR) + "/bench/results/step_h200_2026-11-23/step_h200_dense.csv";
ModelSpec dsv32() { return load_model_spec(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/models/deepseek-v3.2.yaml"); }

std::string scratch(const std::string& name) {
  const fs::path d = fs::path(HISPARSE_BINARY_DIR) / "test_scratch";
  fs::create_directories(d);
  return (d / name).string();
}

}  // namespace

TEST_CASE("step ops: core/decode_layer_ops.h counts every measured row's FLOPs and bytes as the benchmark did") {
  const ModelSpec m = dsv32();
  int compared = 0;
  for (const sim::StepBenchMeasurement& r : sim::read_step_csv(kDense)) {
    if (r.op == "graph_gap" || r.family == "layer") continue;
    const std::string op = r.op == "topk" && r.context <= m.top_k ? "topk_all" : r.op;
    bool found = false;
    for (const DecodeOpWork& w : decode_layer_ops(m, r.batch, r.context, 8, true))
      if (w.op == op && w.dtype == r.dtype) {
        found = true;
        CAPTURE(r.op);
        CAPTURE(r.batch);
        CHECK(std::abs(w.flops - r.flops) <= 0.5 + 1e-12 * r.flops);
        CHECK(std::abs(w.bytes - r.bytes) <= 0.5 + 1e-12 * r.bytes);
        ++compared;
      }
    CHECK(found);
  }
  CHECK(compared > 800);
  // Expert load: batch 1 of DeepSeek-V3.2 at EP 8: 64 picks over 256 experts touch ~7 of this GPU's 32, one token each.
  const ExpertLoad one = expert_load(m, 1, 8);
  CHECK(one.active == 7);
  CHECK(one.tokens_per_expert == 2);  // ceil(8 / 7)
  const ExpertLoad many = expert_load(m, 64, 8);
  CHECK(many.active == 32);
  CHECK(many.tokens_per_expert == 16);  // 64 x 8 / 32
}

TEST_CASE("step fit: models generated from known constants are recovered; held-out points follow them") {
  const ModelSpec m = dsv32();
  // Rows made by known models: a GEMM that is a floor then bandwidth-bound, attention in waves of 132 blocks.
  std::vector<sim::StepBenchMeasurement> rows;
  for (int B : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256})
    for (const DecodeOpWork& w : decode_layer_ops(m, B, 4096, 8)) {
      double us = 0;
      if (w.op == "q_a") us = std::max(6.0, w.bytes / 3.0e12 * 1e6);
      else if (w.op == "attention_fast") us = 2.0 + 140.0 * std::ceil(w.blocks / 132.0);
      else continue;
      rows.push_back({"GPU", m.name, w.op, w.family, w.dtype, "synthetic", B, 0, us, w.flops, w.bytes});
    }
  const sim::StepCalibration c = sim::fit_step_calibration(rows, m, {1, 3, 6, 12, 24, 48, 96, 160, 256}, 8);
  const sim::OpTimeModel* q = c.find("q_a", "fp8");
  REQUIRE(q);
  CHECK(q->held_out_max_error < 1e-9);  // exact data: the laws are fitted exactly
  CHECK(q->fit_max_error < 1e-9);
  const sim::OpTimeModel* a = c.find("attention_fast", "bf16");
  REQUIRE(a);
  CHECK(a->held_out_max_error < 1e-9);
  CHECK(a->wave_blocks >= 128);
  CHECK(a->wave_blocks <= 132);
}

TEST_CASE("step ops: top-k's blocks follow cuda/topk.cu's split of a row at the default kernel config") {
  const ModelSpec m = dsv32();
  auto topk = [&](int B, int64_t n) {
    for (const DecodeOpWork& w : decode_layer_ops(m, B, n, 8))
      if (w.family == "topk") return w;
    FAIL("no top-k op");
    return DecodeOpWork{};
  };
  // Batch 1 at 64K: 132 x 4 blocks would fit, the 2048-position minimum chunk allows 32.
  DecodeOpWork w = topk(1, 65536);
  CHECK(w.blocks == 32);
  CHECK(w.block_bytes == 2048 * 4);
  CHECK(w.pass_blocks == 1);
  // Batch 24: floor(528 / 24) = 22 blocks a row; 65536 / 22 rounds up to 16 warps x 192 = 3072 positions a block.
  w = topk(24, 65536);
  CHECK(w.blocks == 24 * 22);
  CHECK(w.block_bytes == 3072 * 4);
  // Batch 160: 3 blocks a row of 22016 positions; batch 256 at 4K: 2 blocks of 2048.
  CHECK(topk(160, 65536).blocks == 480);
  CHECK(topk(160, 65536).block_bytes == 22016 * 4);
  CHECK(topk(256, 4096).blocks == 512);
  CHECK(topk(256, 4096).pass_blocks == 256);
  // Every position selected (context <= K): the grid's blocks return at once, nothing read per block.
  w = topk(8, 2048);
  CHECK(w.op == "topk_all");
  CHECK(w.block_bytes == 0);
  CHECK(w.pass_blocks == 8);
}

TEST_CASE("step fit: whole waves with work per block and a second launch's waves are recovered (top-k law)") {
  const ModelSpec m = dsv32();
  std::vector<sim::StepBenchMeasurement> rows;
  for (int B : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256})
    for (int64_t n : {4096, 16384, 65536})
      for (const DecodeOpWork& w : decode_layer_ops(m, B, n, 8)) {
        if (w.op != "topk") continue;
        // Waves of one block per SM, each as long as a block's slice takes at 20 GB/s; the select pass in waves
        // of 132 rows.
        const double us = 12.0 + std::ceil(w.blocks / 132) * (1.0 + w.block_bytes / 20e3) + 7.0 * std::ceil(B / 132.0);
        rows.push_back({"GPU", m.name, w.op, w.family, w.dtype, "synthetic", B, n, us, w.flops, w.bytes});
      }
  const sim::StepCalibration c = sim::fit_step_calibration(rows, m, {1, 3, 6, 12, 24, 48, 96, 160, 256}, 8);
  const sim::OpTimeModel* t = c.find("topk", "fp32");
  REQUIRE(t);
  CHECK(t->fit_max_error < 1e-9);
  CHECK(t->held_out_max_error < 1e-9);
  CHECK(t->block_bytes_per_s == doctest::Approx(20e9).epsilon(1e-9));
  CHECK(t->pass_wave_blocks >= 128);  // the fit batches 96 and 160 cannot tell 128 from 132
  CHECK(t->pass_wave_blocks <= 132);
  CHECK(t->per_pass_wave_us == doctest::Approx(7.0).epsilon(1e-9));
  // The new terms survive the YAML and predict alike.
  sim::StepCalibration named = c;
  named.date = "2026-11-23";
  named.made_from = "test";
  const std::string path = scratch("step_cal_waves.yaml");
  write_file_atomically(path, sim::step_calibration_yaml(named));
  const sim::StepCalibration back = sim::load_step_calibration(path);
  const sim::OpTimeModel* tb = back.find("topk", "fp32");
  REQUIRE(tb);
  for (int B : {1, 5, 140, 256})
    for (const DecodeOpWork& w : decode_layer_ops(m, B, 32768, 8))
      if (w.op == "topk") CHECK(tb->predict(w) == doctest::Approx(t->predict(w)).epsilon(1e-4));
}

TEST_CASE("step fit: a by-work op keeps whichever of table and waves predicts left-out fit works better") {
  const ModelSpec m = dsv32();
  auto rows_of = [&](auto law) {
    std::vector<sim::StepBenchMeasurement> rows;
    for (int B : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256})
      for (int64_t n : {2048, 8192, 32768, 65536})
        for (const DecodeOpWork& w : decode_layer_ops(m, B, n, 8))
          if (w.op == "indexer")
            rows.push_back({"GPU", m.name, w.op, w.family, w.dtype, "synthetic", B, n, law(w), w.flops, w.bytes});
    return sim::fit_step_calibration(rows, m, {1, 3, 6, 12, 24, 48, 96, 160, 256}, 8);
  };
  // A staircase: waves of 396 blocks (3 a SM) at 40 us each, plus a bandwidth term. The table cannot follow the
  // steps between fit works; the waves are recovered and held-out points follow them.
  const sim::StepCalibration stairs =
      rows_of([](const DecodeOpWork& w) { return 5.0 + 40.0 * std::ceil(w.blocks / 396) + w.bytes / 2e12 * 1e6; });
  const sim::OpTimeModel* s = stairs.find("indexer", "fp8");
  REQUIRE(s);
  CHECK(s->form == "sum");
  CHECK(s->left_out_waves_loss < s->left_out_table_loss);
  CHECK(s->held_out_max_error < 1e-9);
  CHECK(s->per_wave_us == doctest::Approx(40.0).epsilon(1e-9));
  // A smooth power law of the work: no whole waves explain it, and the table interpolates it closely.
  const sim::StepCalibration smooth =
      rows_of([](const DecodeOpWork& w) { return 3.0 * std::pow(w.bytes / 1e5, 0.6); });
  const sim::OpTimeModel* t = smooth.find("indexer", "fp8");
  REQUIRE(t);
  CHECK(t->form == "table");
  CHECK(t->left_out_table_loss < t->left_out_waves_loss);
  CHECK(t->held_out_max_error < 0.02);
}

TEST_CASE("step fit: the shipped H200 sweep meets the held-out bar for the layer and the op families measured") {
  const ModelSpec m = dsv32();
  const sim::StepCalibration c =
      sim::fit_step_calibration(sim::read_step_csv(kDense), m, {1, 3, 6, 12, 24, 48, 96, 160, 256}, 8);
  int layer_checks = 0;
  for (const sim::StepCheck& k : c.checks) layer_checks += k.what == "layer" && k.held_out;
  CHECK(layer_checks >= 50);  // 9 held-out batches x 6 contexts
  CHECK(c.max_check_error("layer", true) <= 0.10);
  for (const char* fam : {"family attention", "family gemm", "family grouped_gemm", "family elementwise"}) {
    CAPTURE(fam);
    CHECK(c.max_check_error(fam, true) <= 0.10);
  }
  // The indexer (whole waves of its blocks, chosen over the table) and top-k (the kernel's split of a row) families.
  for (const char* fam : {"family indexer", "family topk"}) {
    CAPTURE(fam);
    CHECK(c.max_check_error(fam, true) <= 0.10);
  }
  const sim::OpTimeModel* idx = c.find("indexer", "fp8");
  REQUIRE(idx);
  CHECK(idx->form == "sum");
  CHECK(idx->left_out_waves_loss < idx->left_out_table_loss);
  CHECK(c.graph_gap_us > 0);
  // Prediction of a whole layer uses the same models as the checks.
  const double layer = sim::predict_moe_layer_us(c, m, 64, 16384);
  CHECK(layer > 1000);
  CHECK(layer < 3000);
}

TEST_CASE("step calibration YAML: round trip, strict reading") {
  const ModelSpec m = dsv32();
  sim::StepCalibration c =
      sim::fit_step_calibration(sim::read_step_csv(kDense), m, {1, 3, 6, 12, 24, 48, 96, 160, 256}, 8);
  c.date = "2026-11-23";
  c.made_from = "test";
  const std::string path = scratch("step_cal_roundtrip.yaml");
  write_file_atomically(path, sim::step_calibration_yaml(c));
  const sim::StepCalibration back = sim::load_step_calibration(path);
  CHECK(back.device == c.device);
  CHECK(back.ops.size() == c.ops.size());
  CHECK(back.fit_batches == c.fit_batches);
  for (int B : {1, 7, 100, 256})
    CHECK(sim::predict_moe_layer_us(back, m, B, 32768) ==
          doctest::Approx(sim::predict_moe_layer_us(c, m, B, 32768)).epsilon(1e-4));
  std::string text = sim::step_calibration_yaml(c);
  const std::string bad = scratch("step_cal_bad.yaml");
  write_file_atomically(bad, text + "surprise: 1\n");
  CHECK_THROWS_WITH_AS(sim::load_step_calibration(bad), doctest::Contains("surprise"), Error);
  const size_t at = text.find(", form: ");
  write_file_atomically(bad, text.substr(0, at) + ", form: cubic" + text.substr(text.find(',', at + 2)));
  CHECK_THROWS_WITH_AS(sim::load_step_calibration(bad), doctest::Contains("cubic"), Error);
}

TEST_CASE("step CSV: a wrong header, a short line or a bad number is an error naming the file and line") {
  const std::string path = scratch("step_bad.csv");
  const std::string header = "device,model,op,family,dtype,impl,batch,context,median_us,flops,bytes\n";
  auto write = [&](const std::string& text) {
    std::ofstream(path) << text;
  };
  write("op,us\n");
  CHECK_THROWS_WITH_AS(sim::read_step_csv(path), doctest::Contains("line 1"), Error);
  write(header + "\"GPU\",m,q_a,gemm,fp8\n");
  CHECK_THROWS_WITH_AS(sim::read_step_csv(path), doctest::Contains("step_bad.csv:2: 5 fields, the header has 11"), Error);
  write(header + "\"GPU\",m,q_a,gemm,fp8,\"x\",1,0,-3,1,1\n");
  CHECK_THROWS_WITH_AS(sim::read_step_csv(path), doctest::Contains("median_us"), Error);
  write(header);
  CHECK_THROWS_WITH_AS(sim::read_step_csv(path), doctest::Contains("no rows"), Error);
}

TEST_CASE("calibration choice: auto loads the hardware's files, none and a hardware without them say roofline") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  // The H200 names one device calibration (`bench --calibrate`) whose `step:` section holds the per-op models.
  REQUIRE(s.hardware.step_calibration.empty());
  REQUIRE(sim::has_step_section(s.hardware.calibration));
  sim::CostParams p;
  const std::string line = sim::apply_calibrations("auto", "auto", &s, &p);
  CHECK(line.find("PCIe and swap-in copy calibrated (NVIDIA H200, 2026-11-23, ") != std::string::npos);
  CHECK(line.find("calibrated per op (NVIDIA H200, 2026-11-23, ") != std::string::npos);
  CHECK(line.find("h200-device-2026-11-23.yaml") != std::string::npos);
  CHECK(p.step != nullptr);
  CHECK(p.swap_in_cost.calibrated);
  // A separate per-op file named by the hardware wins over the section.
  Scenario t = load_scenario("dsv32-8xh200-1tb");
  t.hardware.step_calibration = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h200-step-2026-11-23.yaml";
  sim::CostParams tp;
  CHECK(sim::apply_calibrations("auto", "auto", &t, &tp).find("h200-step-2026-11-23.yaml") != std::string::npos);

  Scenario r = load_scenario("dsv32-8xh200-1tb");
  sim::CostParams q;
  const std::string none = sim::apply_calibrations("none", "none", &r, &q);
  CHECK(none.find("--calibration none") != std::string::npos);
  CHECK(none.find("--step-calibration none") != std::string::npos);
  CHECK(q.step == nullptr);
  CHECK_FALSE(q.swap_in_cost.calibrated);

  Scenario h20 = load_scenario("dsv32-2x8xh20-pd");
  sim::CostParams w;
  const std::string bare = sim::apply_calibrations("auto", "auto", &h20, &w);
  CHECK(bare.find("names no calibration") != std::string::npos);
  CHECK(w.step == nullptr);
}

TEST_CASE("calibration choice: among the hardware's per-op calibrations, auto takes the model's at the nearest ep") {
  // Expectation: the H200 lists GLM-5 calibrations at EP 8 and EP 16 besides DeepSeek-V3.2's; a GLM-5 deployment at
  // ep 8 gets the EP 8 file, at ep 16 (and at ep 32, nearer 16) the EP 16 file; DeepSeek-V3.2 keeps its own.
  Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  REQUIRE(s.hardware.step_calibrations.size() >= 2);
  sim::CostParams p8;
  CHECK(sim::apply_calibrations("auto", "auto", &s, &p8).find("h200-step-glm5-ep8-") != std::string::npos);
  REQUIRE(p8.step);
  CHECK(p8.step->model == "glm-5");
  CHECK(p8.step->ep == 8);
  for (int ep : {16, 32}) {
    Scenario t = load_scenario("glm51-8xh200-tp8-r11");
    t.deployment.decode.ep = ep;
    sim::CostParams q;
    CHECK(sim::apply_calibrations("auto", "auto", &t, &q).find("h200-step-glm5-ep16-") != std::string::npos);
    REQUIRE(q.step);
    CHECK(q.step->ep == 16);
  }
  Scenario d = load_scenario("dsv32-8xh200-1tb");
  sim::CostParams pd;
  sim::apply_calibrations("auto", "auto", &d, &pd);
  REQUIRE(pd.step);
  CHECK(pd.step->model == "deepseek-v3.2");
}

TEST_CASE("hardware step_calibrations: a missing file or a non-path entry is an error naming the list entry") {
  // Expectation: the loader resolves each entry against the hardware file and refuses one that does not exist.
  const std::string dir = scratch("hw_steps");
  std::filesystem::create_directories(dir);
  // The H20's file without its relative cost_model/calibration paths (they would not resolve from here).
  std::string base;
  const std::string h20 = read_file(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/hardware/h20.yaml");
  TextLines lines(h20);
  for (std::string line; lines.next(line);)
    if (line.rfind("cost_model:", 0) != 0 && line.rfind("calibration:", 0) != 0 &&
        line.rfind("attention_table", 0) != 0)
      base += line + "\n";
  write_file_atomically(dir + "/hw.yaml", base + "\nstep_calibrations:\n  - nowhere.yaml\n");
  CHECK_THROWS_WITH_AS(load_hardware_spec(dir + "/hw.yaml"), doctest::Contains("step_calibrations[0]"), Error);
  write_file_atomically(dir + "/hw2.yaml", base + "\nstep_calibrations:\n  - {a: 1}\n");
  CHECK_THROWS_WITH_AS(load_hardware_spec(dir + "/hw2.yaml"), doctest::Contains("expected a calibration YAML path"),
                       Error);
}

TEST_CASE("cost model with per-op calibration: the projection GEMMs cost what the fitted models say") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  sim::CostParams p;
  sim::apply_calibrations("none", "auto", &s, &p);
  REQUIRE(p.step);
  const sim::DecodeCostModel with(s, p, true);
  sim::CostParams roof;
  const sim::DecodeCostModel without(s, roof, true);
  sim::GpuBatch b;
  b.requests = 32;
  b.sum_n = 32.0 * 16384;
  b.sum_attended = 32.0 * 2048;
  b.slow_path = 32;
  // Top-k is entirely calibrated: per selecting layer, the fitted model at batch 32 and context 16K.
  const DecodeOpWork* topk = nullptr;
  const auto ops = decode_layer_ops(s.model, 32, 16384, s.deployment.decode.ep);
  for (const DecodeOpWork& w : ops)
    if (w.op == "topk") topk = &w;
  REQUIRE(topk);
  const double per_layer_us = p.step->find("topk", "fp32")->predict(*topk);
  const double layers = double(with.gpu_phases(b).topk) / (per_layer_us * 1e3);
  CHECK(layers == doctest::Approx(s.model.layers).epsilon(0.01));
  // The calibrated step differs from the roofline one, and stays positive in every phase.
  const sim::GpuPhases a = with.gpu_phases(b), r = without.gpu_phases(b);
  CHECK(a.attention != r.attention);
  CHECK(a.indexer > 0);
  CHECK(a.topk > 0);
  CHECK(with.moe_phase(256, 32).compute > 0);
  // A calibration of another model is refused rather than applied to the wrong shapes.
  Scenario other = s;
  other.model.name = "glm-5";
  CHECK_THROWS_WITH_AS(sim::DecodeCostModel(other, p, true), doctest::Contains("deepseek-v3.2"), Error);
}
