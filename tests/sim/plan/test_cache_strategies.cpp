// @brief Cache strategies in `plan` (sim/plan/cache_strategies.h): per-request HBM / host / PCIe of each strategy on
// the bundled dsv32-8xh200-1tb against figures derived by hand, the identities between strategies (full KV and
// HiSparse = the plan's rows, eviction at E ≥ n = full KV memory, masking = full-KV memory with HiSparse's step
// without IO, compression at c = 1 and no reconstruction = full KV), and the recall read from a select.json fixture.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"
#include "sim/serving/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

PlanOptions options(const StrategyOptions& so, std::vector<int64_t> lens = {32768}) {
  PlanOptions o;
  o.seq_lens = std::move(lens);
  o.sweep_buffer_sizes = {4096};
  o.sweep_ratios = {5};
  o.cost.overlap = OverlapMode::kNone;
  o.strategies = so;
  o.strategies.enabled = true;
  return o;
}

CapacityPlan plan_with(const StrategyOptions& so, std::vector<int64_t> lens = {32768}) {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.hardware.deltakv_calibration.clear();  // the hand-worked figures use the assumed reconstruction cost
  return compute_capacity_plan(s, options(so, std::move(lens)), default_miss_curves(s));
}

const StrategyRow& srow(const CapacityPlan& p, int64_t n, const std::string& key) {
  for (const auto& r : p.strategies.rows)
    if (r.seq_len == n && r.key == key) return r;
  FAIL("no strategy row " << key);
  return p.strategies.rows.front();
}

const PlanRow& prow(const CapacityPlan& p, int64_t n, KvMode m) {
  for (const auto& r : p.rows)
    if (r.seq_len == n && r.mode == m) return r;
  FAIL("no plan row");
  return p.rows.front();
}

std::string fixture() {
  std::ifstream in(std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/select_small.json");
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("cache strategies: per-request bytes at 32K on dsv32-8xh200-1tb by hand") {
  const CapacityPlan p = plan_with(StrategyOptions{});
  REQUIRE(p.strategies.rows.size() == 5);
  // L = 62, row = 1152, idx = 132, page 64, H = 4096, K = 2048, full pool 369,024 tokens, full cell 79,608 B.
  // Full KV: 32,768 × 62 × (1152 + 132) = 2,608,594,944 B; no host, no PCIe; hbm floor(369,536 / 33,280) = 11.
  const StrategyRow& f = srow(p, 32768, "full");
  CHECK(f.hbm_per_request == 2608594944.0);
  CHECK(f.host_per_request == 0);
  CHECK(f.pcie_bytes_per_step == 0);
  CHECK(f.hbm_limit_per_rank == 11);
  CHECK(f.attended_rows == 2048);
  // HiSparse: (4096 + 64) × 62 × 1152 + 32,768 × 62 × 132 = 297,123,840 + 268,173,312 = 565,297,152 B;
  // host 32,768 × 62 × 1152 = 2,340,421,632 B; PCIe = misses × 1152 + 62 × 1152 (the backup, 71,424 B).
  const StrategyRow& h = srow(p, 32768, "hisparse");
  const PlanRow& ph = prow(p, 32768, KvMode::kHiSparse);
  CHECK(h.hbm_per_request == 565297152.0);
  CHECK(h.host_per_request == 2340421632.0);
  CHECK(h.pcie_bytes_per_step == doctest::Approx(ph.misses_per_request_step * 1152 + 71424.0));
  CHECK(h.pcie_bytes_per_step > 71424.0);  // n > H: some misses
  // Eviction at E = top_k = 2048: 2048 × 62 × 1284 = 163,037,184 B; hbm with the PD decode reserve R = 512
  // floor((369,024 + 512) / (2048 + 512)) = floor(144.35) = 144; no host, PCIe.
  const StrategyRow& e = srow(p, 32768, "eviction");
  CHECK(p.strategies.eviction_budget == 2048);
  CHECK(e.hbm_per_request == 163037184.0);
  CHECK(e.host_per_request == 0);
  CHECK(e.pcie_bytes_per_step == 0);
  CHECK(e.hbm_limit_per_rank == 144);
  CHECK(e.attended_rows == 2048);
  CHECK(e.indexed_rows == 2048);
  // Masking: memory of full KV, no host, no PCIe; attends K = 2048, indexes all 32,768.
  const StrategyRow& m = srow(p, 32768, "masking");
  CHECK(m.hbm_per_request == 2608594944.0);
  CHECK(m.hbm_limit_per_rank == 11);
  CHECK(m.host_per_request == 0);
  CHECK(m.pcie_bytes_per_step == 0);
  CHECK(m.attended_rows == 2048);
  CHECK(m.indexed_rows == 32768);
  // Compression S = 4, R = 256, c = 4: f = 260, m = 32,508;
  // 62 × (260 × 1152 + 32,508 × 288 + 32,768 × 132) = 62 × (299,520 + 9,362,304 + 4,325,376) = 62 × 13,987,200
  // = 867,206,400 B; hbm with R = 512 tokens of 79,608 B reserved per request:
  // floor((29,377,262,592 + 40,759,296) / (867,206,400 + 40,759,296)) = floor(29,418,021,888 / 907,965,696) = 32.
  // Reconstruction (assumed 1152 / 4 + 1152 = 1440 B per row and layer) of min(2048, 32,508) = 2048 rows:
  // 2048 × 62 × 1440 = 182,845,440 B per step.
  const StrategyRow& z = srow(p, 32768, "compression");
  CHECK(z.hbm_per_request == 867206400.0);
  CHECK(z.host_per_request == 0);
  CHECK(z.pcie_bytes_per_step == 0);
  CHECK(z.hbm_limit_per_rank == 32);
  CHECK(p.strategies.reconstruct_assumed);
  CHECK(p.strategies.reconstruct_bytes == 1440.0);
  CHECK(z.reconstruct_bytes_per_step == 182845440.0);
  // Each strategy's concurrency is bounded by its own HBM limit.
  for (const auto& r : p.strategies.rows) {
    CHECK(r.max_per_rank <= r.hbm_limit_per_rank);
    CHECK(r.max_concurrency == r.max_per_rank * 8);
  }
}

TEST_CASE("cache strategies: full KV and HiSparse rows are the plan's") {
  const CapacityPlan p = plan_with(StrategyOptions{}, {16384, 65536, 131072});
  for (int64_t n : {16384, 65536, 131072}) {
    for (auto [key, mode] : {std::pair<const char*, KvMode>{"full", KvMode::kFull}, {"hisparse", KvMode::kHiSparse}}) {
      const StrategyRow& r = srow(p, n, key);
      const PlanRow& q = prow(p, n, mode);
      CHECK(r.hbm_per_request == q.hbm_per_request.value);
      CHECK(r.host_per_request == q.host_per_request.value);
      CHECK(r.max_per_rank == q.max_per_rank);
      CHECK(r.max_concurrency == q.max_concurrency);
      CHECK(r.binding_limit == q.binding_limit);
      CHECK(r.decode_tokens_per_s == q.decode_tokens_per_s);
      CHECK(r.tpot_ms == q.at_max.step_ns * 1e-6);
    }
  }
}

TEST_CASE("cache strategies: eviction at E >= n is full KV") {
  StrategyOptions so;
  so.eviction_budget = 65536;
  const CapacityPlan p = plan_with(so, {16384, 32768});
  for (int64_t n : {16384, 32768}) {
    const StrategyRow& e = srow(p, n, "eviction");
    const StrategyRow& f = srow(p, n, "full");
    CHECK(e.hbm_per_request == f.hbm_per_request);
    CHECK(e.hbm_limit_per_rank == f.hbm_limit_per_rank);
    CHECK(e.slo_limit_per_rank == f.slo_limit_per_rank);
    CHECK(e.max_per_rank == f.max_per_rank);
    CHECK(e.tpot_ms == f.tpot_ms);
    CHECK(e.decode_tokens_per_s == doctest::Approx(f.decode_tokens_per_s));
  }
}

TEST_CASE("cache strategies: logical masking = full-KV memory, HiSparse's step without IO") {
  const CapacityPlan p = plan_with(StrategyOptions{});
  const StrategyRow& m = srow(p, 32768, "masking");
  const StrategyRow& f = srow(p, 32768, "full");
  const StrategyRow& h = srow(p, 32768, "hisparse");
  CHECK(m.hbm_per_request == f.hbm_per_request);
  CHECK(m.attended_rows == h.attended_rows);
  CHECK(m.indexed_rows == h.indexed_rows);
  // HiSparse's step with no misses, less its swap-in kernel and the stall the backup causes: indexer, top-k, attention
  // and MoE only — the masking step at the same batch (overlap none).
  REQUIRE(m.max_per_rank > 0);
  const StepTimeModel hs(p.scenario, p.options.cost, true, nullptr);
  const StepEstimate e = hs.step(m.max_per_rank, 32768);
  CHECK(e.h2d_bytes == 0);
  const SimTime no_io = e.cost.indexer + e.cost.topk + e.cost.attention + e.cost.moe;
  CHECK(std::llround(m.tpot_ms * 1e6) == no_io);
  CHECK(no_io < e.step_ns);  // the swap-in kernel alone costs something
}

TEST_CASE("cache strategies: compression at c = 1 without reconstruction is full KV") {
  StrategyOptions so;
  so.compression_ratio = 1;
  so.reconstruct_bytes = 0;
  const CapacityPlan p = plan_with(so, {16384, 32768, 131072});
  for (int64_t n : {16384, 32768, 131072}) {
    const StrategyRow& z = srow(p, n, "compression");
    const StrategyRow& f = srow(p, n, "full");
    CHECK(z.hbm_per_request == f.hbm_per_request);
    CHECK(z.hbm_limit_per_rank == f.hbm_limit_per_rank);
    CHECK(z.max_per_rank == f.max_per_rank);
    CHECK(z.binding_limit == f.binding_limit);
    CHECK(z.tpot_ms == f.tpot_ms);
    CHECK(z.decode_tokens_per_s == doctest::Approx(f.decode_tokens_per_s).epsilon(1e-9));
    CHECK(z.reconstruct_bytes_per_step == 0);
  }
  // A larger ratio needs less HBM and fits at least as many requests.
  so.compression_ratio = 8;
  const CapacityPlan q = plan_with(so, {32768});
  CHECK(srow(q, 32768, "compression").hbm_per_request < srow(q, 32768, "full").hbm_per_request);
  CHECK(srow(q, 32768, "compression").hbm_limit_per_rank > srow(q, 32768, "full").hbm_limit_per_rank);
}

TEST_CASE("cache strategies: recall from a select.json fixture, and not measured without it") {
  // Without a file: only full KV has a recall (1 by definition); nothing is invented.
  const CapacityPlan none = plan_with(StrategyOptions{});
  CHECK(srow(none, 32768, "full").recall.known);
  CHECK(srow(none, 32768, "full").recall.value == 1.0);
  for (const char* k : {"hisparse", "eviction", "masking", "compression"}) {
    CHECK_FALSE(srow(none, 32768, k).recall.known);
    CHECK(srow(none, 32768, k).recall.text.find("not measured") == 0);
  }
  StrategyOptions so;
  so.recall_file = "select_small.json";
  so.recall_json = fixture();
  const CapacityPlan p = plan_with(so);
  // HiSparse and masking: the oracle's row at K = 2048 (the indexer stand-in's value is named alongside).
  CHECK(srow(p, 32768, "hisparse").recall.known);
  CHECK(srow(p, 32768, "hisparse").recall.value == 1.0);
  CHECK(srow(p, 32768, "hisparse").recall.text.find("0.7500") != std::string::npos);
  CHECK(srow(p, 32768, "masking").recall.value == 1.0);
  // Eviction: sink-recent at K = E = 2048, the "all" row (not layer 0's 0.1).
  CHECK(srow(p, 32768, "eviction").recall.known);
  CHECK(srow(p, 32768, "eviction").recall.value == 0.8125);
  // Compression: no selector stands for it.
  CHECK_FALSE(srow(p, 32768, "compression").recall.known);
  // E = 1024 has no sink-recent row in the file: not measured, naming the K values there.
  so.eviction_budget = 1024;
  const CapacityPlan q = plan_with(so);
  CHECK_FALSE(srow(q, 32768, "eviction").recall.known);
  CHECK(srow(q, 32768, "eviction").recall.text.find("K there: 2048,256") != std::string::npos);
  // --recall-top-k reads another K for every strategy.
  so.recall_top_k = 256;
  const CapacityPlan r = plan_with(so);
  CHECK(srow(r, 32768, "eviction").recall.value == 0.5);
  CHECK_FALSE(srow(r, 32768, "hisparse").recall.known);  // no oracle row at 256 in the fixture
}

TEST_CASE("cache strategies: off by default, bad inputs refused") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  PlanOptions o;
  o.seq_lens = {32768};
  o.sweep_buffer_sizes = {4096};
  o.sweep_ratios = {5};
  CHECK(compute_capacity_plan(s, o, default_miss_curves(s)).strategies.rows.empty());
  StrategyOptions so;
  so.compression_ratio = 0.5;
  CHECK_THROWS(plan_with(so));
  CHECK_THROWS(strategy_recall("eviction", "{not json", "x.json", 2048, 2048, 0));
}

TEST_CASE("cache strategies: the hardware's DeltaKV calibration replaces the assumed reconstruction cost") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.hardware.deltakv_calibration = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/data/deltakv_calibration_fixture.yaml";
  StrategyOptions so;
  so.enabled = true;
  const CapacityPlan p = compute_capacity_plan(s, options(so, {32768}), default_miss_curves(s));
  // Fixture: 0.5 ns per 576-element row on a 3.2 TB/s GPU = 1600 B of HBM time; the deployment's row is 1152 B,
  // the measured row 2 × 576 = 1152 B, so 1600 B per compressed row attended per layer.
  CHECK_FALSE(p.strategies.reconstruct_assumed);
  CHECK(p.strategies.reconstruct_bytes == doctest::Approx(1600.0));
  CHECK(p.strategies.reconstruct_label.rfind("calibrated: ", 0) == 0);
  MESSAGE("--reconstruct-bytes still wins over the calibration");
  so.reconstruct_bytes = 10;
  const CapacityPlan q = compute_capacity_plan(s, options(so, {32768}), default_miss_curves(s));
  CHECK(q.strategies.reconstruct_bytes == 10.0);
  CHECK(q.strategies.reconstruct_label == "--reconstruct-bytes");
}

TEST_CASE("cache strategies: the shipped H200 names its measured DeltaKV calibration") {
  const Scenario s = load_scenario("dsv32-8xh200-1tb");
  StrategyOptions so;
  const CapacityPlan p = compute_capacity_plan(s, options(so, {32768}), default_miss_curves(s));
  // Expectation: 2.8476 ns per 1152-byte row × 4.8 TB/s = 13,668.48 B per compressed row and layer, labelled calibrated.
  CHECK_FALSE(p.strategies.reconstruct_assumed);
  CHECK(p.strategies.reconstruct_bytes == doctest::Approx(13668.48));
  CHECK(p.strategies.reconstruct_label.find("h200-deltakv-2026-11-26.yaml") != std::string::npos);
}
