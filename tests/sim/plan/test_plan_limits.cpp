// @brief Capacity plan: the binding-limit rule, the step-time model's invariants and its agreement with the
// serving engine on a homogeneous batch, the SLO and PCIe searches, and the sweeps.
#include <doctest/doctest.h>

// GCC 12 at -O2 reports the vectors of a CostParams{} temporary passed to StepTimeModel as maybe-uninitialized (the
// known false positive of inlined std::vector destructors, as in tests/sim/cost/terms/test_cost_params.cpp; it appeared
// here when CostParams gained its op tables); nothing here reads uninitialized memory (ASan/UBSan run this file too).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/plan/capacity_plan.h"
#include "sim/serving/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

std::vector<PlanLimit> limits(std::initializer_list<std::pair<const char*, int64_t>> v) {
  std::vector<PlanLimit> out;
  for (const auto& [k, x] : v) out.push_back(PlanLimit{k, k, x, ""});
  return out;
}

MissFraction flat(double f) {
  return [f](int64_t) { return f; };
}

}  // namespace

TEST_CASE("binding limit: the smallest applicable one, ties by the documented order") {
  // hbm 10 < slo 12: hbm binds; -1 (does not apply) never binds.
  CHECK(binding_limit(limits({{"hbm", 10}, {"logical_pool", -1}, {"slo", 12}})).key == "hbm");
  // slo 7 < hbm 10.
  CHECK(binding_limit(limits({{"hbm", 10}, {"slo", 7}})).key == "slo");
  // pcie == slo: the copy alone breaks the SLO one request later, so PCIe is the cause.
  CHECK(binding_limit(limits({{"slo", 7}, {"pcie", 7}, {"hbm", 9}})).key == "pcie");
  // hbm == logical_pool: hbm comes first in limit_keys().
  CHECK(binding_limit(limits({{"logical_pool", 5}, {"hbm", 5}})).key == "hbm");
  // A count cap ties with memory: the cap binds.
  CHECK(binding_limit(limits({{"hbm", 5}, {"max_running_requests", 5}})).key == "max_running_requests");
  // Zero is a real limit (nothing fits), not "does not apply".
  CHECK(binding_limit(limits({{"hbm", 0}, {"slo", 3}})).key == "hbm");
  CHECK_THROWS_AS(binding_limit(limits({{"hbm", -1}})), hisparse::Error);
}

TEST_CASE("step model: breakdown sums to the step, IO only in HiSparse past H, monotone in the batch") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const StepTimeModel full(s, CostParams{}, false, nullptr);
  const StepTimeModel hs(s, CostParams{}, true, flat(0.1));
  for (int64_t n : {2000, 4096, 4097, 65536}) {
    SimTime prev_f = 0, prev_h = 0;
    for (int64_t B : {1, 2, 5, 17, 64}) {
      CAPTURE(n);
      CAPTURE(B);
      const StepEstimate f = full.step(B, n), h = hs.step(B, n);
      CHECK(f.cost.critical_path() == f.step_ns);
      CHECK(h.cost.critical_path() == h.step_ns);
      CHECK(f.h2d_bytes == 0);
      CHECK(f.backup_bytes == 0);
      // n ≤ H = 4096: the fast path, nothing to load; past H: (min(n, 2048) − 1) × 61 × 0.1 rows per request.
      if (n <= 4096) CHECK(h.misses == 0);
      else CHECK(h.misses == doctest::Approx(B * 2047.0 * 61 * 0.1));
      CHECK(h.h2d_bytes == doctest::Approx(h.misses * 1152));
      CHECK(f.step_ns >= prev_f);
      CHECK(h.step_ns >= prev_h);
      prev_f = f.step_ns;
      prev_h = h.step_ns;
      // Throughput = B × 8 ranks / step.
      CHECK(f.tokens_per_s == doctest::Approx(B * 8 / (f.step_ns * 1e-9)));
    }
  }
  // The miss copy: 61 layers × 2 µs latency + bytes / min(50 GB/s gather, 55.3 GB/s PCIe, 307.2 / 4 = 76.8 GB/s DRAM).
  CHECK(hs.h2d_rate() == 50e9);
  const StepEstimate e = hs.step(4, 65536);
  CHECK(e.h2d_transfer_ns == 61 * 2000 + transfer_ns(e.h2d_bytes, 50e9));
}

TEST_CASE("step model: the SLO and PCIe searches return the last fitting batch") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const StepTimeModel hs(s, CostParams{}, true, flat(0.5));
  const SimTime slo = 50'000'000;
  for (int64_t n : {8192, 131072}) {
    const int64_t b = hs.max_batch_within(n, slo, 1 << 16);
    REQUIRE(b > 0);
    CHECK(hs.step(b, n).step_ns <= slo);
    CHECK(hs.step(b + 1, n).step_ns > slo);
    const int64_t io = hs.max_batch_io_within(n, slo, 1 << 16);
    CHECK(io >= b);  // the copy is part of the step
    CHECK(hs.step(io, n).h2d_transfer_ns <= slo);
    CHECK(hs.step(io + 1, n).h2d_transfer_ns > slo);
  }
  // A cap below the answer returns the cap; an impossible SLO returns 0.
  CHECK(hs.max_batch_within(8192, slo, 3) == 3);
  CHECK(hs.max_batch_within(8192, 1000, 1 << 16) == 0);
}

TEST_CASE("step model agrees with the serving engine on a homogeneous batch") {
  // One decode GPU (so the engine's batch is the rank's batch), requests of 9,000 prompt tokens joining one by one as
  // prefill finishes them, then leaving one by one. Steps without a newcomer (no first-step burst of misses) hold B
  // requests of n within ±48 tokens of each other; the closed form step(B, 9,024) must match the engine's step within 0.1 %.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.decode = InstanceSpec{1, 1, 1, 1, 1};
  s.deployment.memory.kv_budget_bytes = 29e9;  // one GPU cannot hold all weights; pin the KV budget instead
  Workload w;
  w.name = "homogeneous";
  for (int64_t i = 0; i < 12; ++i) w.requests.push_back(RequestSpec{i, 0, 9000, 48});
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  bool calibrated = false;
  SUBCASE("roofline defaults") {}
  SUBCASE("measured swap-in costs (scenarios/calibration)") {
    // The calibrated copy moves rows at a batch-dependent rate with a measured fixed cost per call.
    apply_calibration(load_calibration(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h200-2026-11-21.yaml"),
                      &s, &opt.cost);
    calibrated = true;
  }
  CHECK(opt.cost.swap_in_cost.calibrated == calibrated);
  // One fraction for engine and closed form (the default surface's at n 9,024; its warm-up and its slope in n/H
  // would make the engine's misses differ from step to step, which is not what this compares).
  const double f = default_miss_curves(s).fraction(s.deployment.hisparse.device_buffer_size, 9024);
  StatisticalMissParams mp = default_miss_params(s);
  mp.by_ratio = {{1.0, f}};
  mp.warmup_steps = 0;
  const auto miss = make_statistical_miss_model(mp);
  opt.miss_model = miss.get();
  const ServingResult r = run_serving(s, w, opt);
  const StepTimeModel hs(s, opt.cost, true, flat(f));
  int compared = 0;
  // Prefill writes arriving KV into the host pool by RDMA, which shares host DRAM with the miss copy (not in the
  // closed form): compare only steps after the last request became ready.
  SimTime last_ready = 0;
  for (const auto& o : r.requests) last_ready = std::max(last_ready, o.ready);
  for (size_t k = 1; k < r.steps.size(); ++k) {
    const int32_t B = r.steps[k].requests;
    if (B != r.steps[k - 1].requests || r.steps[k].start < last_ready) continue;
    // Steady misses: B × 2,047 × 61 × f rows (± rounding carry); a newcomer's empty start would add ~K × 61.
    if (std::abs(static_cast<double>(r.steps[k].misses) - B * 2047.0 * 61 * f) > B + 1) continue;
    const double engine = static_cast<double>(r.steps[k].end - r.steps[k].start);
    const double model = static_cast<double>(hs.step(B, 9024).step_ns);
    CAPTURE(k);
    CAPTURE(B);
    CHECK(model == doctest::Approx(engine).epsilon(0.001));
    ++compared;
  }
  CHECK(compared > 10);
}

TEST_CASE("plan: HiSparse SLO row, gain and sweeps are consistent") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  PlanOptions o;
  o.seq_lens = {32768};
  o.sweep_buffer_sizes = {2048, 4096, 8192};
  o.sweep_ratios = {1, 5, 10};
  const CapacityPlan p = compute_capacity_plan(s, o, default_miss_curves(s));
  REQUIRE(p.rows.size() == 2);
  const PlanRow& h = p.rows[1];
  // At 32K the TPOT SLO binds HiSparse: the step at the maximum fits 50 ms, one more request per rank does not.
  CHECK(h.binding_limit == "slo");
  CHECK(h.at_max.step_ns <= 50'000'000);
  CHECK(h.decode_tokens_per_s == doctest::Approx(h.max_concurrency / (h.at_max.step_ns * 1e-9)));
  CHECK_FALSE(h.slo_note.empty());
  // Throughput curves hold both modes, stop at the memory limit, and are marked against the SLO.
  REQUIRE(p.curves.size() == 2);
  for (const auto& c : p.curves) {
    CHECK(c.points.back().batch_per_rank <= c.memory_limit_per_rank);
    for (const auto& pt : c.points) CHECK(pt.within_slo == (pt.tpot_ms <= 50.0));
  }
  // Sweeps: one row per (value, seq_len); the current setting is flagged; a larger ratio never grows the device pool
  // (the indexer cache per device token grows with it), a larger H never lowers the device buffer bytes.
  REQUIRE(p.sweep_buffer.size() == 3);
  REQUIRE(p.sweep_ratio.size() == 3);
  CHECK(p.sweep_buffer[1].is_current);
  CHECK(p.sweep_ratio[1].is_current);
  CHECK(p.sweep_ratio[0].device_pool_tokens > p.sweep_ratio[1].device_pool_tokens);
  CHECK(p.sweep_ratio[1].device_pool_tokens > p.sweep_ratio[2].device_pool_tokens);
  CHECK(p.sweep_buffer[0].device_buffer_bytes < p.sweep_buffer[2].device_buffer_bytes);
  // Ratio 1: logical pool = device pool → floor(device / 32,768) requests per rank bind before the buffers.
  CHECK(p.sweep_ratio[0].binding_limit == "logical_pool");
  // An H below top_k is rejected as SGLang rejects it.
  o.sweep_buffer_sizes = {1024};
  CHECK_THROWS_AS(compute_capacity_plan(s, o, default_miss_curves(s)), hisparse::Error);
}

TEST_CASE("step model under attention TP: each layer pays the o_proj all-reduce over the collective link") {
  // GLM-5.1 on 8 x H200 with attention TP 8: one rank of 8 GPUs, each computing 1/8 of the heads.
  const Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  const StepTimeModel tp(s, CostParams{}, false, nullptr);
  REQUIRE(tp.layout().ranks == 1);
  REQUIRE(tp.layout().attention_tp == 8);
  const CollectiveLink link = collective_link(s);
  CHECK(link.label.rfind("nvlink", 0) == 0);
  const DecodeCostModel cost(tp.rank_scenario(), CostParams{}, false);
  for (int64_t B : {1, 4, 32}) {
    CAPTURE(B);
    GpuBatch b;
    b.requests = B;
    b.sum_n = static_cast<double>(B) * 8192;
    b.sum_attended = static_cast<double>(B) * std::min<int64_t>(8192, s.model.top_k);
    const StepEstimate e = tp.step(B, 8192);
    // Hand-derived: per layer, the intranode all-reduce latency (one node) + 2 (8 - 1) / 8 × B × hidden × 2 bytes over
    // NVLink at its efficiency.
    const CostParams p;
    const double moved = 2.0 * 7 / 8 * static_cast<double>(B) * s.model.hidden_size * 2;
    const SimTime per_layer = p.all_reduce_latency_intranode_ns + seconds_to_ns_ceil(moved / (link.bytes_per_s * p.efficiency.nvlink));
    CHECK(e.cost.attention == cost.gpu_phases(b).attention + per_layer * s.model.layers);
  }
  // Attention DP (the DeepSeek node): no all-reduce.
  const Scenario dp = load_scenario("dsv32-8xh200-1tb");
  CHECK(attention_allreduce_ns(StepTimeModel(dp, CostParams{}, false, nullptr).layout().attention_tp, 450e9, false,
                               dp.model, CostParams{}, 16) == 0);
}
