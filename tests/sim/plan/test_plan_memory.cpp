// @brief Capacity plan: per-request bytes and every memory limit of both bundled scenarios against values computed by
// hand (the arithmetic is written before each check), and the pool overrides.
#include <doctest/doctest.h>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"
#include "tests/sim/plan_test_util.h"
#include "sim/serving/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

CapacityPlan plan_of(const Scenario& s, std::vector<int64_t> lens = default_seq_lens()) {
  PlanOptions o;
  o.seq_lens = std::move(lens);
  o.sweep_buffer_sizes = {4096};
  o.sweep_ratios = {s.deployment.hisparse.host_to_device_ratio};
  return compute_capacity_plan(s, o, default_miss_curves(s));
}

const PlanRow& row(const CapacityPlan& p, int64_t n, KvMode m) { return test::plan_row(p, n, m); }
int64_t limit(const PlanRow& r, const std::string& key) { return test::plan_limit(r, key); }

}  // namespace

TEST_CASE("plan: dsv32-8xh200-1tb memory limits by hand") {
  const CapacityPlan p = plan_of(load_scenario("dsv32-8xh200-1tb"));
  // Layout: dp_attention 8 = tp 8 → 8 ranks of one GPU each.
  CHECK(p.layout.ranks == 8);
  CHECK(p.layout.attention_tp == 1);
  // Pools (tests/core/test_memory_budget.cpp): full 369,024; device 261,504; logical 1,307,520; host 1,307,584 tokens.
  const PlanRow& f16 = row(p, 16384, KvMode::kFull);
  const PlanRow& h16 = row(p, 16384, KvMode::kHiSparse);
  // PD decode: SGLang admits while R = 512 tokens per running request stay free, so a pool P holds
  // floor((P + 512) / (paged + 512)) requests (docs/capacity.md).
  // Full KV, 16K: floor((369,024 + 512) / (16,384 + 512)) = floor(369,536 / 16,896) = 21 per rank; HBM per request
  // 16,384 × 62 × (1152 + 132) = 1,304,297,472.
  CHECK(limit(f16, "hbm") == 21);
  CHECK(f16.hbm_per_request.value == 1304297472.0);
  CHECK(f16.host_per_request.value == 0);
  // Full KV has no host pool, host DRAM or PCIe limit.
  CHECK(limit(f16, "logical_pool") == -1);
  CHECK(limit(f16, "host_dram") == -1);
  CHECK(limit(f16, "pcie") == -1);
  // HiSparse, 16K: device buffers floor(261,504 / (4096 + 64)) = floor(261,504 / 4,160) = 62;
  // logical floor((1,307,520 + 512) / 16,896) = floor(77.4) = 77 (77 × 16,384 + 76 × 512 = 1,300,480 ≤ 1,307,520;
  // 78 × 16,384 + 77 × 512 = 1,317,376 > 1,307,520);
  // host pool floor(1,307,584 / 16,384) = 79;
  // host DRAM: 1 TiB / 8 GPUs = 137,438,953,472 B per GPU; one request 16,384 × 62 × 1152 = 1,170,210,816 B;
  // floor(137,438,953,472 / 1,170,210,816) = floor(117.4) = 117.
  CHECK(limit(h16, "hbm") == 62);
  CHECK(limit(h16, "logical_pool") == 77);
  CHECK(limit(h16, "host_pool") == 79);
  CHECK(limit(h16, "host_dram") == 117);
  CHECK(p.host_dram_per_gpu == 137438953472.0);
  // HBM per request: buffer 4,160 × 62 × 1152 = 297,123,840 + indexer 16,384 × 62 × 132 = 134,086,656 → 431,210,496.
  CHECK(h16.gpu_latent_per_request.value == 297123840.0);
  CHECK(h16.gpu_indexer_per_request.value == 134086656.0);
  CHECK(h16.hbm_per_request.value == 431210496.0);
  CHECK(h16.host_per_request.value == 1170210816.0);
  // 128K: full floor(369,536 / 131,584) = 2; HiSparse logical floor(1,308,032 / 131,584) = 9,
  // host DRAM floor(137,438,953,472 / (131,072 × 71,424 = 9,361,686,528)) = floor(14.68) = 14.
  const PlanRow& f128 = row(p, 131072, KvMode::kFull);
  const PlanRow& h128 = row(p, 131072, KvMode::kHiSparse);
  CHECK(limit(f128, "hbm") == 2);
  CHECK(limit(h128, "hbm") == 62);
  CHECK(limit(h128, "logical_pool") == 9);
  CHECK(limit(h128, "host_dram") == 14);
  // The binding limit is never above any memory limit, and max_concurrency = per rank × 8 ranks.
  for (const auto& r : p.rows) {
    CAPTURE(r.seq_len);
    CHECK(r.max_concurrency == r.max_per_rank * 8);
    for (const auto& l : r.limits)
      if (l.per_rank >= 0) CHECK(r.max_per_rank <= l.per_rank);
  }
  // HBM use at the maximum fits the KV budget (29,379,097,081.6 B), in both modes.
  for (const auto& r : p.rows) CHECK(r.latent_used_bytes + r.indexer_used_bytes <= p.hbm.kv_budget);
  // HBM split: outside the static pool = HBM × (1 − 0.85) = 150,754,820,096 × 0.15 = 22,613,223,014.4.
  CHECK(p.hbm.outside_static == doctest::Approx(22613223014.4));
}

TEST_CASE("plan: dsv32-2x8xh20-pd memory limits by hand (attention TP, ratio 10)") {
  const CapacityPlan p = plan_of(load_scenario("dsv32-2x8xh20-pd"));
  // tp 8, dp_attention 1 → one rank of 8 GPUs; the latent of each request is on all 8.
  CHECK(p.layout.ranks == 1);
  CHECK(p.layout.attention_tp == 8);
  // KV budget = 102,625,181,696 × 0.92 − 86.25e9 = 94,415,167,160.32 − 86,250,000,000 = 8,165,167,160.32.
  // Full pool = floor(8,165,167,160.32 / 79,608) = 102,567 → 1,602 pages × 64 = 102,528.
  // HiSparse cell = 62 × (1152 + 10 × 132) = 62 × 2,472 = 153,264; floor(8,165,167,160.32 / 153,264) = 53,275
  // → 832 pages × 64 = 53,248; logical = 532,480.
  CHECK(p.budget.full_pool_tokens.value == 102528);
  CHECK(p.budget.device_pool_tokens.value == 53248);
  // 16K full: floor(102,528 / 16,384) = 6. 128K full: floor(102,528 / 131,072) = 0 → nothing fits, 0 tokens/s.
  CHECK(limit(row(p, 16384, KvMode::kFull), "hbm") == 6);
  const PlanRow& f128 = row(p, 131072, KvMode::kFull);
  CHECK(f128.max_concurrency == 0);
  CHECK(f128.binding_limit == "hbm");
  CHECK(f128.decode_tokens_per_s == 0);
  // HiSparse 16K: floor(53,248 / 4,160) = 12 device buffers; 128K: logical floor(532,480 / 131,072) = 4.
  CHECK(limit(row(p, 16384, KvMode::kHiSparse), "hbm") == 12);
  CHECK(limit(row(p, 131072, KvMode::kHiSparse), "logical_pool") == 4);
  // Host DRAM 2 TiB / 8 GPUs = 274,877,906,944 B per GPU; 128K needs 9,361,686,528 per GPU → floor(29.36) = 29.
  CHECK(limit(row(p, 131072, KvMode::kHiSparse), "host_dram") == 29);
}

TEST_CASE("plan: pool overrides replace SGLang's arithmetic") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.memory.full_pool_tokens = 100000;
  s.deployment.memory.device_pool_tokens = 41600;   // exactly 10 device buffers of 4,160
  s.deployment.memory.host_pool_tokens = 65536;
  const CapacityPlan p = plan_of(s, {16384});
  // With R = 512 reserved per request (PD decode): full floor((100,000 + 512) / (16,384 + 512)) = floor(5.95) = 5;
  // device floor(41,600 / 4,160) = 10; logical 41,600 × 5 = 208,000 → floor(208,512 / 16,896) = 12;
  // host pool floor(65,536 / 16,384) = 4 → binds.
  CHECK(p.budget.full_pool_tokens.formula.find("override") != std::string::npos);
  CHECK(limit(row(p, 16384, KvMode::kFull), "hbm") == 5);
  const PlanRow& h = row(p, 16384, KvMode::kHiSparse);
  CHECK(limit(h, "hbm") == 10);
  CHECK(limit(h, "logical_pool") == 12);
  CHECK(limit(h, "host_pool") == 4);
  CHECK(h.binding_limit == "host_pool");
  CHECK(h.max_concurrency == 32);
}

TEST_CASE("plan: host pools larger than DRAM are reported") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.host_dram_bytes = 512e9;  // host pools need 747 GB per node
  const CapacityPlan p = plan_of(s, {131072});
  bool warned = false;
  for (const auto& w : p.warnings) warned = warned || w.find("fail to allocate") != std::string::npos;
  CHECK(warned);
  // 512e9 / 8 = 64e9 per GPU; floor(64e9 / 9,361,686,528) = 6 < logical 9 → host DRAM binds.
  const PlanRow& h = row(p, 131072, KvMode::kHiSparse);
  CHECK(limit(h, "host_dram") == 6);
  CHECK(h.binding_limit == "host_dram");
}
