// @brief The step model reading op tables: on dsv32-8xh200-1tb with the fixture index (made-up H200 times), each
// table-priced term equals its hand-worked value, terms the tables lack keep their modelled price, and the labels
// reach the cost line, the cost-terms rows and plan's step table; with no table (the shipped empty index) nothing
// changes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/decode_layer_ops.h"
#include "sim/api/plan_request.h"
#include "sim/api/scenario_setup.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/calibration/step_calibration.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/plan/plan_report.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kIndex = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/optables/data/engine_ops.yaml";
const std::string kScenario = "dsv32-8xh200-1tb";  // 8 × H200, attention DP 8, EP 8 (DeepEP), 61 layers, 3 dense

ScenarioSetup setup(const std::string& op_tables, const std::string& scenario = kScenario) {
  ScenarioChoice c;
  c.scenario = scenario;
  c.op_tables = op_tables;
  return load_scenario_setup(c, "test");
}

SimTime ns(double us) { return static_cast<SimTime>(std::ceil(us * 1e3)); }

/// An all-reduce of `bytes` from the fixture's 2- and 4-GPU rows (1 KiB: 10 / 14 µs; 1 MiB: 40 / 60 µs), log-log
/// between them, modelled for 8 GPUs: max(t4 + (t4 − t2), t4, ring bytes over NVLink at efficiency.nvlink).
double allreduce8_us(double bytes, double link, double eff) {
  const double f = std::log(bytes / 1024) / std::log(1024.0);
  const double t2 = 10 * std::pow(4.0, f), t4 = 14 * std::pow(60.0 / 14, f);
  return std::max({2 * t4 - t2, t4, 2.0 * 7 / 8 * bytes / (link * eff) * 1e6});
}

}  // namespace

TEST_CASE("op table step: with no table for the hardware (the shipped index) every term and the cost line are unchanged") {
  // GLM-5.1 on 8 × RTX PRO 6000: the shipped index holds tables of H100 and H200 only.
  const ScenarioSetup shipped = setup("auto", "glm51-8xrtxpro6000-tp8"), none = setup("none", "glm51-8xrtxpro6000-tp8");
  // Expected: the shipped index lists no table of this GPU, so auto adds nothing: no op tables, no line, no rows.
  CHECK(!shipped.cost.op_tables);
  CHECK(shipped.cost_line.find("op tables") == std::string::npos);
  CHECK(none.cost_line.find("op tables off (--op-tables none)") != std::string::npos);
  StepTimeModel a(shipped.scenario, shipped.cost, KvMode::kHiSparse, nullptr),
      b(none.scenario, none.cost, KvMode::kHiSparse, nullptr);
  for (int64_t B : {1, 16, 64}) CHECK(a.step(B, 32768).step_ns == b.step(B, 32768).step_ns);
}

TEST_CASE("op table step: the MoE phase's DeepEP dispatch/combine and all-reduces are the tables', 8 GPUs modelled from 2 and 4") {
  const ScenarioSetup s = setup(kIndex);
  REQUIRE(s.cost.op_tables.get() != nullptr);
  const Scenario rank = rank_scenario(s.scenario);
  const DecodeCostModel cost(rank, s.cost, true);
  // T = 64 tokens in the instance, 8 on the busiest GPU.
  const DecodeCostModel::MoeTime moe = cost.moe_phase(64, 8);
  // Dispatch at 8 tokens per rank: 2 GPUs 20 + 20 × 7/63, 4 GPUs 25 + 30 × 7/63, so 8 GPUs (one more doubling)
  // t4 + (t4 − t2) = 34.444 µs; combine likewise 44.444 µs (30/50 and 35/65 µs at batch 1/64). The payload bound
  // (8 × 8 × 7168 B × 7/8 over 450 GB/s × 0.765 ≈ 1.2 µs) does not bind.
  const double t2d = 20 + 20 * 7.0 / 63, t4d = 25 + 30 * 7.0 / 63, t2c = 30 + 20 * 7.0 / 63, t4c = 35 + 30 * 7.0 / 63;
  const SimTime a2a = ns(2 * t4d - t2d) + ns(2 * t4c - t2c);
  // The 3 dense layers end in an all-reduce of 64 × 7168 × 2 B over the 8 GPUs (TP 8), from the same rule.
  const double link = rank.hardware.nvlink_bytes_per_s;
  const SimTime ar = ns(allreduce8_us(64 * 7168 * 2.0, link, s.cost.efficiency.nvlink));
  // Expected: 58 MoE layers × (dispatch + combine) + 3 dense layers × all-reduce.
  CHECK(moe.all_to_all == 58 * a2a + 3 * ar);
  // Expected the LM head at T = 64: its row, 50 µs (vocab 129,280 / TP 8 = 16,160 outputs, bf16).
  CHECK(cost.lm_head_ns(64) == 50000);
}

TEST_CASE("op table step: routed experts are DeepGEMM's masked GEMMs (gate_up + down) at the busiest GPU's tokens") {
  const ScenarioSetup t = setup(kIndex), n = setup("none");
  const Scenario rank_t = rank_scenario(t.scenario), rank_n = rank_scenario(n.scenario);
  const DecodeCostModel with(rank_t, t.cost, true), without(rank_n, n.cost, true);
  // Without tables the routed experts are the roofline of the expected experts read (docs/cost_model.md, MoE):
  const ModelSpec& m = rank_n.model;
  const double P = 3.0 * m.hidden_size * m.moe_intermediate_size, T = 64, ep = 8;
  const double picks = T * m.experts_per_token, touched = 1 - std::pow(1 - 1.0 / m.routed_experts, picks);
  const double bpp = m.expert_weight_bytes_per_param > 0 ? m.expert_weight_bytes_per_param : n.cost.weight_bytes_per_param;
  const auto& e = n.cost.efficiency.moe;
  const HardwareSpec& hw = rank_n.hardware;
  const SimTime roofline =
      seconds_to_ns_ceil(std::max(2 * P * picks / ep / (hw.fp8_flops * e.compute),
                                  m.routed_experts / ep * touched * P * bpp / (hw.hbm_bytes_per_s * e.memory))) +
      n.cost.graph_kernel_gap_ns;
  // With them: gate_up 40 µs + down 25 µs at 8 tokens per rank (fixture rows), no activation row (not charged).
  // Expected difference of the MoE compute: 58 layers × (65 µs − roofline) plus the LM head's (50 µs − its roofline).
  const SimTime diff = with.moe_phase(T, 8).compute - without.moe_phase(T, 8).compute;
  CHECK(diff == 58 * (65000 - roofline) + (50000 - without.lm_head_ns(T)));
}

TEST_CASE("op table step: q_a and the indexer logits are the tables' at the GPU's batch and mean context") {
  const ScenarioSetup t = setup(kIndex), n = setup("none");
  const Scenario rank_t = rank_scenario(t.scenario), rank_n = rank_scenario(n.scenario);
  const DecodeCostModel with(rank_t, t.cost, true), without(rank_n, n.cost, true);
  GpuBatch b;
  b.requests = 10;
  b.sum_n = 10 * 4096.0;
  b.sum_attended = 10 * 2048.0;
  b.swap = 10;
  // q_a at batch 10: 12 + 6 × 6/12 = 15 µs (fixture lines 3–4), in place of the per-op calibration's q_a.
  REQUIRE(n.cost.step.get() != nullptr);
  std::vector<DecodeOpWork> work = decode_layer_ops(rank_n.model, 10, 4096, 8);
  const auto qa = std::find_if(work.begin(), work.end(), [](const DecodeOpWork& w) { return w.op == "q_a"; });
  const SimTime qa_cal = seconds_to_ns_ceil(n.cost.step->find("q_a", "fp8")->predict(*qa) * 1e-6);
  // Expected: the attention phase moves by 61 layers × (15 µs − the calibrated q_a); nothing else there is in the
  // fixture (the FlashMLA row is absent: the attention table still prices the kernel).
  CHECK(with.gpu_phases(b).attention - without.gpu_phases(b).attention == 61 * (15000 - qa_cal));
  // The indexer logits at batch 10 above the fixture's largest batch 8: extrapolated along batch at context 4096
  // (9 + 4 × 2/7), the grid's smallest context. Expected via the pricing the step model uses:
  const OpTablePricing pricing(t.cost.op_tables->set, rank_t, t.cost.efficiency.nvlink);
  CHECK(pricing.term_ns("indexer_logits", 10, 4096) == ns(9 + 4 * 2.0 / 7));
  CHECK(pricing.term_ns("indexer_logits", 4.5, 10240) == 14000);
}

TEST_CASE("op table step: the cost line, the cost-terms rows and plan's step table label every term") {
  const ScenarioSetup s = setup(kIndex);
  // Expected in the cost line: which terms are measured and from which file, which are modelled from the 2/4-GPU
  // tables (with the rule), which stay modelled as before.
  CHECK(s.cost_line.find("op tables " + kIndex + " (h200, SGLang's kernels;") != std::string::npos);
  CHECK(s.cost_line.find("measured (engine_ops_h200_2026-11-28.csv) indexer_logits, q_a, experts_gate_up, "
                         "experts_down, lm_head") != std::string::npos);
  CHECK(s.cost_line.find("modelled from fewer-GPU measurements (engine_ops_comm_h200x4_2026-11-28.csv) ep_dispatch, "
                         "ep_combine, all_reduce_moe") != std::string::npos);
  CHECK(s.cost_line.find("not in the tables, modelled as before: indexer_q, indexer_k, indexer_w, indexer_topk") !=
        std::string::npos);
  CHECK(s.cost_line.find("more GPUs than measured: t(ranks) = max(") != std::string::npos);
  // Expected a cost-terms row per term: q_a measured with its file and lines; ep_dispatch modelled at 8 GPUs.
  auto row = [&](const std::string& term) -> const TermSource* {
    for (const TermSource& t : s.cost.sources)
      if (t.term == term) return &t;
    return nullptr;
  };
  REQUIRE(row("op_table.q_a"));
  CHECK(row("op_table.q_a")->kind == "measured");
  CHECK(row("op_table.q_a")->value == "dense_gemm over batch 1–16");
  CHECK(row("op_table.q_a")->source.find("engine_ops_h200_2026-11-28.csv lines 2–4 (deep_gemm a1b2c3d") != std::string::npos);
  REQUIRE(row("op_table.ep_dispatch"));
  CHECK(row("op_table.ep_dispatch")->kind == "modelled");
  CHECK(row("op_table.ep_dispatch")->value == "ep_dispatch_ll at 8 GPUs");
  REQUIRE(row("op_table.rmsnorm_q"));
  CHECK(row("op_table.rmsnorm_q")->value == "absent");
  // Plan: the console's "cost model:" line and plan.md's step table carry the same labels.
  PlanRequest r;
  r.setup.scenario = kScenario;
  r.setup.op_tables = kIndex;
  r.seq_lens = {32768};
  const PlanOutcome out = run_plan(r);
  CHECK(plan_console_text(out).find("measured (engine_ops_h200_2026-11-28.csv) indexer_logits, q_a") != std::string::npos);
  const std::string md = plan_to_markdown(out.plan, out.info, {});
  CHECK(md.find("measured from op table engine_ops_h200_2026-11-28.csv: q_a") != std::string::npos);
  CHECK(md.find("modelled from fewer-GPU measurements (engine_ops_comm_h200x4_2026-11-28.csv): ep_dispatch, ep_combine") !=
        std::string::npos);
  CHECK(md.find("op_table.q_a") != std::string::npos);
}

TEST_CASE("op table step: deepep_mode normal asks for the contiguous GEMM and normal-mode DeepEP, absent here") {
  ScenarioSetup s = setup(kIndex);
  s.scenario.deployment.deepep_mode = "normal";
  const OpTablePricing pricing(s.cost.op_tables->set, rank_scenario(s.scenario), s.cost.efficiency.nvlink);
  CHECK(pricing.deepep_mode() == "normal");
  // Expected: the fixture holds masked GEMMs and low-latency DeepEP only, so these terms stay modelled.
  CHECK(pricing.term_ns("experts_gate_up", 8) == -1);
  CHECK(pricing.expert_collective_ns("ep_dispatch", 8, 8, 450e9) == -1);
  // auto is low_latency in decode (SGLang's rule).
  s.scenario.deployment.deepep_mode = "auto";
  CHECK(OpTablePricing(s.cost.op_tables->set, rank_scenario(s.scenario), 0.765).term_ns("experts_gate_up", 8) == 40000);
}

TEST_CASE("op table step: SGLang's fused q_a + kv_a GEMM prices both, charged to q_a; weights_proj prices indexer_w") {
  // A table holding the fused GEMM (n = 1536 + 512 + 64 = 2112) and the indexer's weights projection, as the
  // collector writes them (made-up times).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hs_optables_fused";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string g = "NVIDIA H200,580.159.04,1980,";
  std::ofstream(dir / "engine_ops_h200_2026-11-28.csv")
      << "op,library,commit,gpu,driver,sm_clock_mhz,params,batch,context,bytes,median_us,p10_us,p90_us,iters,method\n"
      << "dense_gemm,deep_gemm,abc," << g << "dtype=fp8;k=7168;model=deepseek-v3.2;n=2112;name=fused_qkv_a;tp=1,1,0,0,11,11,11,9,graph\n"
      << "dense_gemm,deep_gemm,abc," << g << "dtype=fp8;k=7168;model=deepseek-v3.2;n=2112;name=fused_qkv_a;tp=1,8,0,0,15,15,15,9,graph\n"
      << "dense_gemm,torch,2.9," << g << "dtype=bf16;k=7168;model=deepseek-v3.2;n=64;name=weights_proj;tp=1,1,0,0,6,6,6,9,graph\n"
      << "dense_gemm,torch,2.9," << g << "dtype=bf16;k=7168;model=deepseek-v3.2;n=64;name=weights_proj;tp=1,8,0,0,8,8,8,9,graph\n";
  std::ofstream(dir / "engine_ops.yaml")
      << "tables:\n  - {file: engine_ops_h200_2026-11-28.csv, hardware: h200, gpus: 1, date: 2026-11-28, command: c, "
         "libraries: {deep_gemm: abc, torch: 2.9}, device_log: bench/results/x/device.log}\n";
  const ScenarioSetup s = setup((dir / "engine_ops.yaml").string());
  const OpTablePricing pricing(s.cost.op_tables->set, rank_scenario(s.scenario), s.cost.efficiency.nvlink);
  // Expected at batch 4: the fused call 11 + 4 × 3/7 µs charged to q_a, nothing to kv_a; indexer_w 6 + 2 × 3/7.
  CHECK(pricing.decode_op_ns("q_a", 4) == ns(11 + 4 * 3.0 / 7));
  CHECK(pricing.decode_op_ns("kv_a", 4) == 0);
  CHECK(pricing.decode_op_ns("indexer_w", 4) == ns(6 + 2 * 3.0 / 7));
  // Expected labels: q_a and kv_a measured by the fused row (no term of its own), indexer_w by weights_proj.
  CHECK(s.cost_line.find("measured (engine_ops_h200_2026-11-28.csv) indexer_w, q_a, kv_a;") != std::string::npos);
  CHECK(s.cost_line.find("fused_qkv_a") == std::string::npos);
}
