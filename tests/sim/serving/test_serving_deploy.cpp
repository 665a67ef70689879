// @brief Serving as SGLang is deployed: attention TP vs DP ranks, colocated chunked prefill and staging, pool-driven
// admission (the "HiSparse host mem pool alloc failed" field failure), closed-loop clients, the sweep's crossover.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/scenario_loader.h"
#include "sim/cost/step/decode_cost_model.h"
#include "sim/serving/ranks.h"
#include "sim/serving/concurrency_sweep.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/serving_simulation.h"
#include "sim/workload/workload.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {


ServingOptions full_kv() {
  ServingOptions o;
  o.mode = KvMode::kFull;
  return o;
}

}  // namespace

TEST_CASE("attention TP holds one rank's requests per instance, attention DP one per GPU (hand-derived)") {
  // dsv32-2x8xh20-pd: tp 8, dp_attention 1 → one rank of 8 GPUs. Pools per rank (tests/core/test_memory_budget.cpp):
  // device N = 53,248 tokens, logical N × 10 = 532,480, host (⌊532,480 / 64⌋ + 1) × 64 = 532,544. A request of
  // 10,000 + 100 tokens (> H = 4,096) holds H + page = 4,160 device slots and paged(10,100) = 10,112 logical tokens:
  // ⌊53,248 / 4,160⌋ = 12 by the device pool, ⌊532,480 / 10,112⌋ = 52 by the logical one → 12 per rank.
  Scenario tp = load_scenario("dsv32-2x8xh20-pd");
  tp.deployment.prefill.count = 0;  // prefill outside: admission and decode only
  tp.deployment.memory.device_pool_tokens = 53248;  // as derived; pinned so the DP variant keeps the same pools
  Scenario dp = tp;
  dp.deployment.decode.dp_attention = 8;
  const ServingRanks rt = serving_ranks(tp), rd = serving_ranks(dp);
  CHECK(rt.layout.ranks == 1);
  CHECK(rt.gpus_per_rank == 8);
  CHECK(rd.layout.ranks == 8);
  CHECK(rd.gpus_per_rank == 1);
  CHECK(rank_layout(tp).ranks == rt.layout.ranks);  // the planner's layout
  const Workload w = burst(200, 10000, 100);
  ServingOptions opt;
  opt.mode = KvMode::kHiSparse;
  const ServingResult a = run_serving(tp, w, opt), b = run_serving(dp, w, opt);
  CHECK(a.device_pool_tokens == 53248);
  CHECK(a.logical_pool_tokens == 532480);
  CHECK(a.host_pool_tokens == 532544);
  CHECK(max_step_requests(a) == 12);      // 1 rank × 12
  CHECK(max_step_requests(b) == 8 * 12);  // 8 ranks × 12
  CHECK(a.finished == 200);
  CHECK(b.finished == 200);
  // Every GPU of a TP rank holds the whole latent: each copies every miss (conservation checks the same).
  CHECK(a.miss_flow_bytes == doctest::Approx(static_cast<double>(a.misses) * a.row_bytes * 8));

  // A lone full-KV request under TP: each GPU computes 128 / 8 = 16 heads, then the o_proj output is all-reduced per
  // layer: 61 × (intranode all-reduce latency + ⌈2 × 7/8 × 7,168 × 2 B / (450 GB/s × nvlink efficiency)⌉).
  const ServingResult one = run_serving(tp, burst(1, 3000, 3), full_kv());
  Scenario heads = tp;
  heads.model.attention_heads = 128 / 8;
  const CostParams p;
  const DecodeCostModel cm(heads, p, false);
  GpuBatch g;
  g.requests = 1;
  g.sum_n = 3001;
  g.sum_attended = 2048;
  const SimTime allreduce = 61 * (p.all_reduce_latency_intranode_ns + seconds_to_ns_ceil(2.0 * 7 / 8 * 7168 * 2 / (450e9 * p.efficiency.nvlink)));
  CHECK(attention_allreduce_ns(rt, p, 1) == allreduce);
  CHECK(attention_allreduce_ns(rd, p, 1) == 0);
  // At the MoE the rank's 8 GPUs split its tokens (SGLang scatters them over the attention-TP group): the busiest
  // GPU holds 1 / 8 of the lone token, as the planner prices it (StepEstimator::max_gpu_tokens).
  const auto moe = cm.moe_phase(1, 1.0 / 8);
  REQUIRE(one.steps.size() == 2);
  CHECK(one.steps[0].end - one.steps[0].start == cm.gpu_phases(g).compute() + allreduce + moe.compute + moe.all_to_all);
  CHECK(one.collective_link.find("nvlink") != std::string::npos);
}

TEST_CASE("PD without a prefill section: TPOT runs from when the request decodes, its queueing is in wait") {
  // 200 requests arrive at once and 12 fit the rank (hand-derived above): the last ones queue for ~16 rounds of 99
  // decode steps. Expected: that queueing is in wait_ms (its max many times a request's whole decode), not in
  // tpot_ms, whose p99 stays near its p50 (it used to run from arrival: p99 / p50 ~ 16).
  Scenario tp = load_scenario("dsv32-2x8xh20-pd");
  tp.deployment.prefill.count = 0;
  tp.deployment.memory.device_pool_tokens = 53248;
  const ServingResult r = run_serving(tp, burst(200, 10000, 100), full_kv());
  REQUIRE(r.finished == 200);
  const ServingSummary s = summarize(r, tp);
  CHECK(s.tpot_ms.count == 200);
  CHECK(s.wait_ms.count == 200);
  CHECK(s.tpot_ms.p99 < 1.5 * s.tpot_ms.p50);
  CHECK(s.wait_ms.max > 10 * 99 * s.tpot_ms.max);
  for (const auto& o : r.requests) CHECK(tpot_origin(o) == o.ready);
  CHECK(summary_json(r, tp).find("\"wait_ms\": {\"p50\"") != std::string::npos);
  CHECK(requests_csv(r).find(",wait_ms,") != std::string::npos);
}

TEST_CASE("an instance over two nodes prices the all-to-all at the NICs; no NVLink uses PCIe peer") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.decode = InstanceSpec{1, 16, 16, 16, 16};
  const ServingRanks two = serving_ranks(s);
  CHECK(two.nodes == 2);
  // 8 NICs of 400 Gb/s per node shared by its 8 GPUs: 50 GB/s per GPU, below NVLink.
  CHECK(two.collective_bytes_per_s == doctest::Approx(s.hardware.nic.bits_per_s / 8 * s.hardware.nic.count / 8));
  CHECK(two.rank_scenario.hardware.nvlink_bytes_per_s == two.collective_bytes_per_s);
  Scenario pcie = load_scenario("dsv32-8xh200-1tb");
  pcie.hardware.nvlink_bytes_per_s = 0;
  const ServingRanks p = serving_ranks(pcie);
  CHECK(p.collective_bytes_per_s == pcie.hardware.pcie.h2d_bulk_bytes_per_s);
  CHECK(p.collective_link.find("pcie peer") != std::string::npos);
  // The slower link lengthens the MoE phase of the same step.
  const Workload w = burst(16, 2000, 4);
  const ServingResult nv = run_serving(load_scenario("dsv32-8xh200-1tb"), w, full_kv());
  const ServingResult pc = run_serving(pcie, w, full_kv());
  CHECK(pc.steps[0].slowest.moe > nv.steps[0].slowest.moe);
}

TEST_CASE("colocated chunked prefill lengthens the decode steps it shares by the chunk's prefill time") {
  // One GPU, colocated (no PD): request A decodes while B's 20,000-token prompt is prefilled in chunks of the cost
  // file's prefill_chunk_tokens C on the same GPU. A step carrying a chunk [p, p + c) lasts its decode part plus
  // prefill_time(p + c) − prefill_time(p) of the instance.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.decode = InstanceSpec{1, 1, 1, 1, 1};
  s.deployment.memory.kv_budget_bytes = 29e9;
  s.deployment.pd_disaggregation = false;
  Workload w;
  w.name = "colocated";
  w.requests.push_back(RequestSpec{0, 0, 1000, 400});
  w.requests.push_back(RequestSpec{1, 500'000'000, 20000, 3});
  for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse}) {
    CAPTURE(to_string(mode));
    ServingOptions opt;
    opt.mode = mode;
    const ServingResult r = run_serving(s, w, opt);
    CHECK(r.prefill_mode == "colocated");
    Scenario inst = s;
    inst.deployment.prefill = s.deployment.decode;
    const DecodeCostModel pc(inst, opt.cost, mode == KvMode::kHiSparse);
    const int64_t C = opt.cost.prefill_chunk_tokens;
    REQUIRE(C < 20000);
    const SimTime expect[2] = {pc.prefill_time(C) - pc.prefill_time(0), pc.prefill_time(20000) - pc.prefill_time(C)};
    // A's own prompt comes first (alone); then B's two chunks, each inside one of A's decode steps.
    std::vector<const StepRow*> chunked;
    for (const auto& st : r.steps)
      if (st.prefill > 0 && st.requests > 0) chunked.push_back(&st);
    REQUIRE(chunked.size() == 2);
    for (int k = 0; k < 2; ++k) {
      const StepRow& st = *chunked[static_cast<size_t>(k)];
      CHECK(st.prefill == expect[k]);
      CHECK(st.prefill_tokens == (k == 0 ? C : 20000 - C));
      CHECK(st.end - st.start == st.slowest.critical_path() + expect[k]);
      // The decode part is that of A's step before B arrived (a token or two shorter).
      const StepRow& before = *(chunked[0] - 1);
      REQUIRE(before.prefill == 0);
      CHECK(static_cast<double>(st.slowest.critical_path()) == doctest::Approx(static_cast<double>(before.end - before.start)).epsilon(0.01));
    }
    const RequestOutcome& b = r.requests[1];
    CHECK(b.first_token == chunked[1]->start + chunked[1]->prefill);
    CHECK(b.first_token - b.arrival >= expect[0] + expect[1]);
    if (mode == KvMode::kHiSparse) {
      // SGLang's staging: the prompts' latent backed up device → host before they decode with HiSparse.
      CHECK(r.staging_bytes == doctest::Approx((1000.0 + 20000.0) * s.model.kv_layers() * 1152));
      CHECK(b.ready > b.first_token);
    } else {
      CHECK(r.staging_bytes == 0);
    }
  }
}

TEST_CASE("logical-only admission reproduces 'HiSparse host mem pool alloc failed'; pool admission waits instead") {
  // GLM-5.1, TP 8, ratio 11, four clients with 46–63K prompts (the field report). The report gave no pool sizes; the
  // host pool is pinned to 3 × 65,536 tokens, below the logical pool (N × 11, over a million tokens): the logical
  // allocator admits all four, the host pool holds three prompts, and decode growth needs more pages still.
  Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  s.deployment.memory.host_pool_tokens = 3 * 65536;
  const Workload mix = glm_field_prompts();
  ServingOptions opt = glm_field_clients(AdmissionCheck::kLogicalOnly);
  const ServingResult bad = run_serving(s, mix, opt);
  CHECK(bad.logical_pool_tokens > 1'000'000);
  CHECK(bad.host_pool_tokens == 3 * 65536);
  CHECK(bad.aborts > 0);
  CHECK(bad.first_abort.find("HiSparse host mem pool alloc failed for") == 0);
  int retried = 0;
  for (const auto& o : bad.requests) retried += o.retries > 0;
  CHECK(retried > 0);
  CHECK(bad.finished + bad.rejected == 8);
  const std::string json = summary_json(bad, s);
  CHECK(json.find("\"host_alloc_failures\": " + std::to_string(bad.aborts)) != std::string::npos);
  CHECK(json.find("\"retried\": " + std::to_string(retried)) != std::string::npos);

  opt.admission = AdmissionCheck::kPools;
  const ServingResult good = run_serving(s, mix, opt);
  CHECK(good.aborts == 0);
  CHECK(good.first_abort.empty());
  CHECK(good.finished == 8);
  CHECK(good.wasted_decode_tokens == 0);
  // Host pages of whole requests, paged(prompt + 3,000): 49,024 + 55,040 + 61,056 + 66,048 = 231,168 > 196,608, so
  // never all four at once.
  CHECK(max_step_requests(good) < 4);
}

TEST_CASE("closed-loop clients hold exactly N requests in flight") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  const Workload mix = generated(21, 40, 3);
  for (int32_t n : {1, 16}) {
    CAPTURE(n);
    ServingOptions opt;
    opt.clients.concurrency = n;
    opt.clients.requests = 12 * n;
    const ServingResult r = run_serving(s, mix, opt);
    CHECK(r.arrivals == 12 * n);
    CHECK(r.finished == 12 * n);
    SimTime last_send = 0;
    for (const auto& o : r.requests) last_send = std::max(last_send, o.arrival);
    int checked = 0;
    for (const auto& st : r.steps) {
      CHECK(st.in_flight <= n);
      if (st.start < last_send) { CHECK(st.in_flight == n); ++checked; }
    }
    CHECK(checked > 10);
    // The requests are the mix's lengths, in order, cycled.
    for (const auto& o : r.requests) CHECK(o.input_tokens == mix.requests[static_cast<size_t>(o.id) % mix.requests.size()].input_tokens);
  }
  // With think time, a client is idle between requests: never more than N, sometimes fewer.
  ServingOptions opt;
  opt.clients.concurrency = 16;
  opt.clients.think_time = 300'000'000;
  opt.clients.requests = 64;
  const ServingResult r = run_serving(s, mix, opt);
  int32_t lo = 16;
  for (const auto& st : r.steps) { CHECK(st.in_flight <= 16); lo = std::min(lo, st.in_flight); }
  CHECK(lo < 16);
}

TEST_CASE("conservation and determinism hold in the new modes") {
  Scenario col = load_scenario("dsv32-8xh200-1tb");
  col.deployment.pd_disaggregation = false;
  Scenario tp = load_scenario("dsv32-2x8xh20-pd");
  const Workload w = generated(5, 20, 2);
  for (const Scenario* s : {&col, &tp})
    for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse})
      for (OverlapMode ov : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
        CAPTURE(s->deployment.name);
        CAPTURE(to_string(mode));
        CAPTURE(to_string(ov));
        ServingOptions opt;
        opt.mode = mode;
        opt.cost.overlap = ov;
        opt.clients.concurrency = 8;
        opt.clients.requests = 40;
        opt.admission = AdmissionCheck::kLogicalOnly;
        const ServingResult a = run_serving(*s, w, opt), b = run_serving(*s, w, opt);  // each checks conservation
        CHECK(a.finished == 40);
        CHECK(summary_json(a, *s) == summary_json(b, *s));
        CHECK(steps_csv(a) == steps_csv(b));
        CHECK(requests_csv(a) == requests_csv(b));
      }
}

TEST_CASE("the sweep's crossover is the level from which HiSparse keeps the lead, where it meets the TPOT SLO") {
  auto pt = [](int32_t c, KvMode m, double tps, double tpot = 10) {
    SweepPoint p;
    p.concurrency = c;
    p.mode = m;
    p.tokens_per_s = tps;
    p.tpot_p50_ms = tpot;
    return p;
  };
  std::vector<SweepPoint> v = {pt(1, KvMode::kFull, 100), pt(1, KvMode::kHiSparse, 90),
                               pt(2, KvMode::kFull, 190), pt(2, KvMode::kHiSparse, 195),   // a lead it loses again
                               pt(4, KvMode::kFull, 300), pt(4, KvMode::kHiSparse, 290),
                               pt(8, KvMode::kFull, 320), pt(8, KvMode::kHiSparse, 500),
                               pt(16, KvMode::kFull, 330), pt(16, KvMode::kHiSparse, 800)};
  // Every level meets a 50 ms SLO: HiSparse leads from 8 on.
  CHECK(find_crossover(v, 50) == 8);
  // Against a 5 ms SLO no level counts: no crossover, however far HiSparse leads.
  CHECK(find_crossover(v, 5) == -1);
  // A lead at a level where HiSparse misses the SLO does not count: 2 (195 > 190) becomes the crossover only if the
  // levels where it trails (4) miss the SLO too; a lead won only past the SLO (8, 16) is none.
  v[5].tpot_p50_ms = 80;   // level 4, HiSparse
  CHECK(find_crossover(v, 50) == 2);
  v[7].tpot_p50_ms = 80;   // level 8
  v[9].tpot_p50_ms = 80;   // level 16
  v[3].tpot_p50_ms = 80;   // level 2
  CHECK(find_crossover(v, 50) == -1);
  v[9].tpot_p50_ms = 10;
  v[9].tokens_per_s = 300;
  CHECK(find_crossover(v, 50) == -1);
  CHECK(parse_concurrency_levels("1,2,4,64", "--concurrency") == std::vector<int32_t>{1, 2, 4, 64});
  CHECK_THROWS_WITH_AS(parse_concurrency_levels("4,2", "--concurrency"), doctest::Contains("ascend"), std::exception);
  CHECK_THROWS_WITH_AS(parse_concurrency_levels("1,x", "--concurrency"), doctest::Contains("'x'"), std::exception);
}
