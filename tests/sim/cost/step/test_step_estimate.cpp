// @brief The one model of a decode step (sim/cost/step/step_estimate.h): each piece on its own, then the planner's closed
// form against the serving engine's steady-state step, in integer ns, for every shipped deployment, both KV modes
// where the model has a sparse indexer, both overlap modes, with and without the hardware's calibration.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/pipeline_stages.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/calibration/op_tables_choice.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/cost/terms/zero_copy_sm_share.h"
#include "sim/miss/miss_model.h"
#include "sim/serving/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

/// The shipped cost terms of the scenario's hardware, its calibrations ("auto") or none, an overlap mode, and the
/// op tables of an index (sim/calibration/op_tables_choice.h; "none": none).
CostParams shipped_params(Scenario* s, bool calibrated, OverlapMode overlap, const std::string& op_tables = "none") {
  CostParams p;
  load_cost_terms("auto", *s, &p);
  apply_calibrations(calibrated ? "auto" : "none", calibrated ? "auto" : "none", s, &p);
  apply_op_tables(op_tables, *s, &p);
  p.overlap = overlap;
  return p;
}

GpuBatch batch_of(const StepEstimator& est, int64_t requests, int64_t n) {
  GpuBatch b;
  for (int64_t i = 0; i < requests; ++i) est.add_request(b, n);
  return b;
}

/// Exactly `per_request` rows per slow-path step (n > H) for every request and step, first or not: the steady
/// miss count the planner's fraction gives, without the statistical model's phases or rounding carry.
class FixedMisses final : public MissModel {
 public:
  FixedMisses(int64_t H, int64_t K, int64_t layers, int64_t per_request)
      : H_(H), K_(K), layers_(layers), per_request_(per_request) {}
  MissResult step(const MissQuery& q, double& /*carry*/) const override {
    MissResult r;
    r.selected = std::min<int64_t>(q.n, K_) * layers_;
    r.misses = q.n > H_ ? per_request_ : 0;
    return r;
  }
  std::string describe() const override { return "fixed misses per step (test)"; }

 private:
  int64_t H_, K_, layers_, per_request_;
};

std::vector<std::string> shipped_deployments() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/deployments"))
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("step estimate (a): the rank's compute, serial and in two micro-batches") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p = shipped_params(&s, false, OverlapMode::kNone);
  const StepEstimator serial(s, p, KvMode::kHiSparse);
  const GpuBatch b = batch_of(serial, 5, 9000);
  // Five requests of 9,000 tokens, past H = 4096 and K = 2048: every one on the slow path, attending K rows.
  CHECK(b.requests == 5);
  CHECK(b.sum_n == 45000);
  CHECK(b.sum_attended == 5 * 2048);
  CHECK(b.slow_path == 5);
  CHECK(b.sum_window_attended == 0);  // no sliding layers in DeepSeek-V3.2
  // The mix form of the same batch is the same batch.
  const GpuBatch m = serial.batch(5, ContextMix::single(9000));
  CHECK(m.sum_n == b.sum_n);
  CHECK(m.sum_attended == b.sum_attended);
  CHECK(m.slow_path == b.slow_path);
  // Serial under attention DP (no all-reduce): the cost model's phases; the copy may start after indexer + top-k +
  // swap-in, and all attention follows it.
  const RankCompute c = serial.rank_compute(b);
  const GpuPhases ph = serial.cost().gpu_phases(b);
  CHECK(c.phases.compute() == ph.compute());
  CHECK(c.compute == ph.compute());
  CHECK(c.io_ready == ph.before_io());
  CHECK(c.tail == ph.attention);

  p.overlap = OverlapMode::kTwoBatch;
  const StepEstimator two(s, p, KvMode::kHiSparse);
  // Halves of 3 and 2 requests: compute is both halves' phases; the copy waits for one layer of the first half's
  // selection, and one layer of the second half's attention follows it; the copy beside compute is the first half's.
  GpuBatch h1 = b, h2 = b;
  h1.requests = 3; h1.sum_n = 27000; h1.sum_attended = 3 * 2048; h1.slow_path = 3;
  h2.requests = 2; h2.sum_n = 18000; h2.sum_attended = 2 * 2048; h2.slow_path = 2;
  const GpuPhases p1 = two.cost().gpu_phases(h1), p2 = two.cost().gpu_phases(h2);
  const RankCompute t = two.rank_compute(b);
  CHECK(t.compute == p1.compute() + p2.compute());
  CHECK(t.io_ready == p1.before_io() / 61);
  CHECK(t.tail == p2.attention / 61);
  CHECK(t.copy_beside == 3);
  CHECK(t.compute > c.compute);  // every kernel launches twice

  // Attention TP (GLM-5 on one rank of 8 GPUs): attention carries the per-layer all-reduce of the o_proj output.
  Scenario g = load_scenario("glm51-8xh200-tp8-r11");
  const CostParams gp = shipped_params(&g, false, OverlapMode::kNone);
  const StepEstimator tp(g, gp, KvMode::kFull);
  REQUIRE(tp.layout().attention_tp == 8);
  const GpuBatch gb = batch_of(tp, 4, 9000);
  const SimTime allreduce = attention_allreduce_ns(8, collective_link(g).bytes_per_s, false, g.model, gp, 4);
  CHECK(allreduce > 0);
  CHECK(tp.rank_compute(gb).phases.attention == tp.cost().gpu_phases(gb).attention + allreduce);
}

TEST_CASE("step estimate (a): GQA sliding layers attend at most the window, in the batch both callers build") {
  // gpt-oss-120b alternates sliding (window 128) and full-attention layers and has no top-k: a request of n tokens
  // reads n rows on a full layer and min(n, 128) on a sliding one.
  Scenario s = load_scenario("gptoss-120b-1xh200");
  REQUIRE(s.model.sliding_window == 128);
  const CostParams p = shipped_params(&s, false, OverlapMode::kNone);
  const StepEstimator est(s, p, KvMode::kFull);
  GpuBatch b;
  est.add_request(b, 3000);
  est.add_request(b, 100);
  CHECK(b.sum_attended == 3100);
  CHECK(b.sum_window_attended == 128 + 100);
  CHECK(b.slow_path == 0);  // full KV: no device buffer
  const GpuBatch m = est.batch(2, ContextMix::single(3000));
  CHECK(m.sum_window_attended == 2 * 128);
  // The window is priced: the same batch without it (all layers reading every row) costs more attention.
  GpuBatch wide = b;
  wide.sum_window_attended = wide.sum_attended;
  CHECK(est.rank_compute(wide).phases.attention > est.rank_compute(b).phases.attention);
}

TEST_CASE("step estimate (b): the miss copy and the backup as calls") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  const CostParams roof = shipped_params(&s, false, OverlapMode::kNone);
  const StepEstimator est(s, roof, KvMode::kHiSparse);
  // Roofline: one call per layer at the PCIe per-operation latency; the rows at most at the gathered-row rate.
  const CopyCall c = est.miss_copy(4, 1000);
  CHECK(c.bytes == 1000.0 * est.cost().kv_row_bytes());
  CHECK(c.latency == 61 * s.hardware.pcie.latency_ns);
  CHECK(c.max_rate == s.hardware.pcie.gather_row_bytes_per_s);
  // Nothing to copy: no call, no latency.
  CHECK(est.miss_copy(4, 0).latency == 0);
  // Closed-form rate: the call's cap, the PCIe link and the DRAM share of 4 GPUs per NUMA node, the least.
  const double dram_share = s.hardware.host_dram_bytes_per_s_per_numa / 4;
  CHECK(est.h2d_rate(c) == std::min({c.max_rate, s.hardware.pcie.h2d_bulk_bytes_per_s, dram_share}));
  // Backup: the previous token's row of every KV layer (61 + 1 MTP layer), one call.
  const CopyCall k = est.backup(4);
  CHECK(k.bytes == 4.0 * est.cost().kv_layers() * est.cost().kv_row_bytes());
  CHECK(k.latency == s.hardware.pcie.latency_ns);
  CHECK(est.d2h_rate() == std::min(s.hardware.pcie.d2h_bulk_bytes_per_s, dram_share));

  // Calibrated: the measured fixed cost and rate of the swap-in kernel this batch runs.
  Scenario sc = load_scenario("dsv32-8xh200-1tb");
  const CostParams cal = shipped_params(&sc, true, OverlapMode::kNone);
  REQUIRE(cal.swap_in_cost.calibrated);
  const StepEstimator m(sc, cal, KvMode::kHiSparse);
  const CopyCall mc = m.miss_copy(4, 61 * 300.0);
  const SwapInCall call{4, 300.0, static_cast<int64_t>(m.cost().kv_row_bytes()), 4096, 2048};
  CHECK(mc.latency == 61 * cal.swap_in_cost.copy_latency_ns(call, sc.hardware.pcie.h2d_bulk_bytes_per_s));
  CHECK(mc.max_rate == cal.swap_in_cost.copy_rate(4));
}

TEST_CASE("step estimate (c): combining the compute with the copies") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p = shipped_params(&s, false, OverlapMode::kNone);
  RankCompute c;
  c.phases.indexer = 100; c.phases.topk = 50; c.phases.swap_in = 50; c.phases.attention = 1000;
  c.compute = 1200; c.io_ready = 200; c.tail = 1000; c.copy_beside = 4;
  {
    const StepEstimator serial(s, p, KvMode::kHiSparse);
    // Serial: the backup ends at 260, so the copy starts at 260 (stall 60), runs 300, then all attention.
    CHECK(serial.io_start(c, 260) == 260);
    CHECK(serial.io_start(c, 150) == 200);
    const RankEnd e = serial.rank_end(c, 260, 560, true);
    CHECK(e.done == 560 + 1000);
    CHECK(e.stall == 60);
    CHECK(e.h2d == 300);
  }
  p.overlap = OverlapMode::kTwoBatch;
  const StepEstimator two(s, p, KvMode::kHiSparse);
  RankCompute t = c;
  t.io_ready = 20;
  t.tail = 16;
  // Hidden copy: 20 → 500 under 1,200 of compute; the zero-copy swap-in holds 4 of 132 SMs (one block per row, large
  // batch kernel) for the 480 ns they overlap: compute ends llround(480 × 4/132) = 15 ns later, counted as h2d.
  const double share = zero_copy_sm_share(p.swap_in_copy_mode, p.swap_in_cost, 4, s.hardware.sm_count);
  REQUIRE(share == doctest::Approx(4.0 / 132));
  const SimTime stolen = std::llround(480 * share);
  RankEnd e = two.rank_end(t, 20, 500, true);
  CHECK(e.done == 1200 + stolen);
  CHECK(e.stall == 0);
  CHECK(e.h2d == stolen);
  // Exposed copy: it ends at 1,300, past compute; one layer of attention (16) follows: done 1,316. The copy waited 30
  // for the backup (start 50), all of which is exposed, the rest is h2d.
  e = two.rank_end(t, 50, 1300, true);
  CHECK(e.done == 1316);
  CHECK(e.stall == 30);
  CHECK(e.h2d == 1316 - 1200 - 30);
  // No copy: nothing stolen, no tail; the rank ends with its compute.
  e = two.rank_end(t, 20, 20, false);
  CHECK(e.done == 1200);
  CHECK(e.h2d == 0);
}

TEST_CASE("step estimate (d): the MoE phase, serial and with one micro-batch's all-to-all under the other's compute") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  CostParams p = shipped_params(&s, false, OverlapMode::kNone);
  const StepEstimator serial(s, p, KvMode::kFull);
  const auto m = serial.cost().moe_phase(32, 4);
  CHECK(serial.moe_ns(32, 4) == m.compute + m.all_to_all);
  p.overlap = OverlapMode::kTwoBatch;
  const StepEstimator two(s, p, KvMode::kFull);
  const auto h = two.cost().moe_phase(16, 2);
  const SimTime fixed = p.step_overhead_ns(/*dp_attention=*/true);  // the DeepSeek node runs attention DP 8
  const SimTime per_batch = h.compute - fixed;
  CHECK(two.moe_ns(32, 4) == 2 * per_batch + fixed + std::max<SimTime>(0, 2 * h.all_to_all - per_batch));
  // The busiest GPU's tokens at the all-to-all: a rank's own under attention DP, an eighth of it under attention TP.
  CHECK(serial.max_gpu_tokens(4) == 4);
  Scenario g = load_scenario("glm51-8xh200-tp8-r11");
  const StepEstimator tp(g, shipped_params(&g, false, OverlapMode::kNone), KvMode::kFull);
  CHECK(tp.max_gpu_tokens(16) == 2);
}

TEST_CASE("step estimate: the closed form's breakdown sums to its step") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  for (OverlapMode o : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
    const CostParams p = shipped_params(&s, false, o);
    const StepEstimator est(s, p, KvMode::kHiSparse);
    const StepEstimate e = est.closed_form(batch_of(est, 6, 9000), 6 * 5000.0);
    CAPTURE(to_string(o));
    CHECK(e.cost.critical_path() == e.step_ns);
    CHECK(e.h2d_bytes == 6 * 5000.0 * est.cost().kv_row_bytes());
    CHECK(e.backup_bytes == est.backup(6).bytes);
    CHECK(e.tokens_per_s == doctest::Approx(6 * 8 / (e.step_ns * 1e-9)));
  }
}

// ---- The planner's step equals the serving engine's, exactly ----
//
// The pinned batch. Prefill runs outside the scenario (PD without prefill instances: each request's KV arrives by
// RDMA at its arrival), so `ranks × B` requests arriving together become ready together; the first one ready starts
// step 0 alone and the others join at step 1. That first one gets one prompt token fewer: it is ready first (fewer
// bytes), and from step 1 on every request holds the same n. Steps ≥ 2 are the steady state: every request backs up
// its previous token (step 1 is the joiners' first, which backs up nothing) and loads the same misses (FixedMisses:
// M rows per step; the planner's fraction is M / ((K − 1) × layers), chosen so that it gives M exactly). Step k holds
// n = prompt + k tokens per request; the planner is asked step(B, prompt + k) with that fraction, and its step and
// every term of its breakdown must equal the engine's step row in integer ns (sync 0: the ranks are alike; backup is
// the engine's record of the copy engine, not on the critical path).

namespace {

struct Pinned {
  int64_t B = 3;              // requests per rank
  int64_t prompt = 0;
  int64_t misses = 0;         // per request and step (HiSparse)
  double fraction = 0;
};

/// M near 10 % of the selections that can miss, such that the planner's (K − 1) × layers × (M / ((K − 1) × layers))
/// gives M back exactly (layers: those whose selections can miss, DeepSeek-V4's C4 layers).
Pinned pinned_for(const Scenario& s, bool hisparse) {
  Pinned pin;
  const int64_t H = s.deployment.hisparse.device_buffer_size, K = hisparse ? s.deployment.hisparse.top_k : s.model.top_k;
  // DeepSeek-V4 selects among n / 4 C4 entries of its C4 layers: the prompt's entries must pass H and K.
  const int64_t per_entry = s.model.is_compressed() ? 4 : 1;
  pin.prompt = std::max<int64_t>({H, K, 256}) * per_entry + 3000;
  if (!hisparse) return pin;
  const int64_t layers = s.model.offload_layers();
  const double slots = static_cast<double>(K - 1) * layers;
  for (int64_t m = static_cast<int64_t>(slots / 10);; ++m) {
    const double f = static_cast<double>(m) / slots;
    if (static_cast<double>(K - 1) * layers * f == static_cast<double>(m)) {
      pin.misses = m;
      pin.fraction = f;
      break;
    }
  }
  return pin;
}

/// What the pinned batch runs beyond the deployment as shipped: MTP with d draft tokens, every one accepted (so each
/// request gains 1 + d whole tokens a step, the same in the engine and the planner), and a longer prompt (dynamic
/// residency: long enough that fewer than B requests per rank stay resident).
struct Variant {
  int mtp_draft = 0;
  int64_t extra_prompt = 0;
};

int check_engine_equals_planner(const std::string& deployment, KvMode mode, OverlapMode overlap, bool calibrated,
                                const std::string& op_tables = "none", Variant v = {}) {
  Scenario s = load_scenario(deployment);
  s.deployment.pd_disaggregation = true;
  s.deployment.prefill.count = 0;
  // The batch is pinned by prefill outside the scenario, a path only SGLang's scheduler runs here (a vLLM deployment's
  // recompute-preemption scheduler is colocated only). The step itself does not depend on the scheduler: a vLLM
  // deployment's swap-in kernel is SGLang's (DeploymentSpec::swap_in_kernel_used), so the comparison is the same step.
  if (s.deployment.engine == "vllm") s.deployment.engine = "sglang";
  if (v.mtp_draft > 0) {
    s.deployment.mtp_draft_tokens = v.mtp_draft;
    s.deployment.mtp_acceptance = 1.0;
  }
  ServingOptions opt;
  opt.mode = mode;
  opt.cost = shipped_params(&s, calibrated, overlap, op_tables);
  const bool hs = mode != KvMode::kFull;
  // Pipeline parallelism: a GPU holds the binding stage's layers, so its misses are counted over that stage's.
  const Scenario stage = pipeline_stage_scenario(s);
  Pinned pin = pinned_for(stage, hs);
  pin.prompt += v.extra_prompt;
  const StepTimeModel planner(s, opt.cost, mode, [f = pin.fraction](int64_t) { return f; });
  const int ranks = planner.layout().ranks;
  // Tokens a request gains per step: 1, or 1 + d with MTP at acceptance 1. The first-ready request gets E prompt
  // tokens fewer, so that from step 1 on every request holds n = prompt + 1 + (k − 1) × E at step k.
  const int64_t E = 1 + v.mtp_draft;
  if (mode == KvMode::kHiSparse) REQUIRE(planner.misses_per_request(pin.prompt + 2) == static_cast<double>(pin.misses));
  FixedMisses fixed(s.deployment.hisparse.device_buffer_size, s.deployment.hisparse.top_k, stage.model.offload_layers(),
                    pin.misses);
  if (hs) opt.miss_model = &fixed;

  Workload w;
  w.name = "pinned";
  const int64_t steps = 6;
  for (int64_t i = 0; i < ranks * pin.B; ++i)
    w.requests.push_back(RequestSpec{i, 0, static_cast<int32_t>(i == 0 ? pin.prompt - E : pin.prompt),
                                     static_cast<int32_t>((steps + 2) * E)});
  const ServingResult r = run_serving(s, w, opt);
  REQUIRE(r.rejected == 0);
  REQUIRE(r.steps.size() > static_cast<size_t>(steps));
  // The pinned shape: step 0 is the first-ready request alone, every later step holds the whole batch.
  REQUIRE(r.steps[0].requests == 1);
  int compared = 0;
  for (int64_t k = 2; k < steps; ++k) {
    const StepRow& row = r.steps[static_cast<size_t>(k)];
    CAPTURE(k);
    REQUIRE(row.requests == ranks * pin.B);
    REQUIRE(row.prefill == 0);
    if (mode == KvMode::kHiSparse) REQUIRE(row.misses == ranks * pin.B * pin.misses * E);
    const StepEstimate e = planner.step(pin.B, pin.prompt + 1 + (k - 1) * E);
    CHECK(e.step_ns == row.end - row.start);
    CHECK(e.cost.indexer == row.slowest.indexer);
    CHECK(e.cost.topk == row.slowest.topk);
    CHECK(e.cost.swap_in == row.slowest.swap_in);
    CHECK(e.cost.attention == row.slowest.attention);
    CHECK(e.cost.h2d == row.slowest.h2d);
    CHECK(e.cost.stall == row.slowest.stall);
    CHECK(e.cost.moe == row.slowest.moe);
    CHECK(e.cost.draft == row.slowest.draft);
    if (v.mtp_draft > 0) CHECK(row.slowest.draft > 0);  // the variant ran: draft passes priced in both
    if (mode == KvMode::kDynamic) {
      // Demoted requests (if any) load misses in both; resident ones none.
      const bool demoted = planner.swap_requests(pin.B, ContextMix::single(pin.prompt + 1 + (k - 1) * E)) > 0;
      CHECK((row.misses > 0) == demoted);
      CHECK((e.misses > 0) == demoted);
    }
    // One rank, nothing to wait for; under pipeline parallelism sync holds the hops between stages, in both.
    CHECK(row.slowest.sync == e.cost.sync);
    if (planner.pp() == 1) CHECK(e.cost.sync == 0);
    // Bytes per GPU: every GPU of a rank copies the rank's misses and backs up its tokens.
    const double gpus = planner.layout().gpus * planner.pp();
    CHECK(e.h2d_bytes * gpus == doctest::Approx(row.h2d_bytes));
    CHECK(e.backup_bytes * gpus == doctest::Approx(row.backup_bytes));
    ++compared;
  }
  return compared;
}

}  // namespace

TEST_CASE("the planner's step equals the serving engine's steady-state step, every shipped deployment") {
  const std::vector<std::string> deployments = shipped_deployments();
  // Expected: the six shipped deployments, three with a sparse indexer (both modes), three GQA/MHA (full KV).
  REQUIRE(deployments.size() >= 6);
  int cases = 0, with_calibration = 0, hisparse_cases = 0;
  for (const std::string& d : deployments) {
    const Scenario s = load_scenario(d);
    std::vector<KvMode> modes = {KvMode::kFull};
    if (s.model.has_sparse_indexer()) modes.push_back(KvMode::kHiSparse);
    std::vector<bool> calibrations = {false};
    if (!s.hardware.calibration.empty()) calibrations.push_back(true);
    for (KvMode mode : modes)
      for (OverlapMode overlap : {OverlapMode::kNone, OverlapMode::kTwoBatch})
        for (bool calibrated : calibrations) {
          const std::string what = d + " " + to_string(mode) + " " + to_string(overlap) +
                                   (calibrated ? " calibrated" : " roofline");
          INFO(what);
          CHECK(check_engine_equals_planner(d, mode, overlap, calibrated) == 4);
          ++cases;
          with_calibration += calibrated;
          hisparse_cases += mode == KvMode::kHiSparse;
        }
  }
  // Every deployment in both overlap modes; the calibrated hardware (H200, H100) again with its measurements.
  CHECK(cases >= 2 * static_cast<int>(deployments.size()));
  CHECK(with_calibration > 0);
  CHECK(hisparse_cases > 0);
}

TEST_CASE("the planner's step equals the serving engine's with op tables (fixture), term by term") {
  const std::string index = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/optables/data/engine_ops.yaml";
  // Expected: the table-priced terms (DeepEP dispatch/combine and the MoE GEMMs under attention DP; the attention
  // all-reduce under attention TP, 8 GPUs modelled from 2 and 4) are the same in both callers.
  for (const char* d : {"dsv32-8xh200-1tb", "glm51-8xh200-tp8-r11"})
    for (OverlapMode overlap : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
      INFO(d << " " << to_string(overlap));
      CHECK(check_engine_equals_planner(d, KvMode::kHiSparse, overlap, true, index) == 4);
    }
}

TEST_CASE("the planner's step equals the serving engine's with MTP, term by term (draft passes included)") {
  // Expected: with d = 2 draft tokens accepted every time, each request's step holds 1 + 2 query positions and gains
  // 3 tokens; the planner's verify pass, draft passes and every other term equal the engine's in integer ns, in both
  // KV modes (HiSparse: each position misses as a decode step, so 3 × M rows per request).
  for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse})
    for (OverlapMode overlap : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
      INFO(to_string(mode) << " " << to_string(overlap));
      CHECK(check_engine_equals_planner("dsv32-8xh200-1tb", mode, overlap, true, "none", Variant{2, 0}) == 4);
    }
}

TEST_CASE("the planner's step equals the serving engine's under dynamic residency, resident and demoted") {
  // Expected: a short prompt keeps all B = 3 requests per rank resident (the resident graph: full KV's step plus the
  // one-token backup); a prompt long enough that the device pool holds fewer than 3 full caches demotes the rest to
  // the buffer (the swap graph, misses for the demoted ones only). In both the planner's terms equal the engine's.
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const StepTimeModel probe(s, CostParams{}, KvMode::kDynamic, [](int64_t) { return 0.1; });
  // The smallest extra prompt (in steps of 16K tokens) at which fewer than 3 requests of a rank stay resident.
  int64_t extra = 0;
  const int64_t base = pinned_for(s, true).prompt;
  while (probe.max_resident_batch(ContextMix::single(base + extra + 8), 64) >= 3) extra += 16384;
  REQUIRE(extra > 0);
  CHECK(probe.swap_requests(3, ContextMix::single(base + extra + 8)) >= 1);
  for (int64_t more : {int64_t{0}, extra})
    for (OverlapMode overlap : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
      INFO("extra prompt " << more << " " << to_string(overlap));
      CHECK(check_engine_equals_planner("dsv32-8xh200-1tb", KvMode::kDynamic, overlap, true, "none", Variant{0, more}) == 4);
    }
}
