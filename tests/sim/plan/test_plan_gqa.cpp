// @brief Capacity plan of GQA / MHA and sliding-window models: full-KV limits from SGLang's MHA and SWA pools, the
// HiSparse rows "not applicable", a step time that charges the K + V read of every attended row (window-capped on
// sliding layers) and grows with the context only through the full-attention layers, and --strategies on them.
#include <doctest/doctest.h>

#include <cmath>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"
#include "tests/sim/plan_test_util.h"
#include "sim/plan/plan_report.h"
#include "sim/plan/plan_table.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

CapacityPlan plan_of(const Scenario& s, bool strategies = false) {
  PlanOptions o;
  o.strategies.enabled = strategies;
  return compute_capacity_plan(s, o, default_miss_curves(s));
}

const PlanRow& row(const CapacityPlan& p, int64_t n, KvMode m) { return test::plan_row(p, n, m); }
int64_t limit(const PlanRow& r, const std::string& key) { return test::plan_limit(r, key); }

}  // namespace

TEST_CASE("plan gqa: every new deployment plans full KV at each context, HiSparse not applicable") {
  for (const char* name : {"llama31-8b-1xh100", "qwen3-32b-2xh200-tp2", "gptoss-120b-1xh200"}) {
    CAPTURE(name);
    const Scenario s = load_scenario(name);
    const CapacityPlan p = plan_of(s);
    REQUIRE(p.rows.size() == 2 * default_seq_lens().size());
    CHECK(p.hisparse_not_applicable.find("not applicable: no sparse indexer") != std::string::npos);
    CHECK(p.sweep_buffer.empty());
    CHECK(p.sweep_ratio.empty());
    CHECK(p.curves.size() == default_seq_lens().size());
    for (size_t i = 0; i < p.budget.per_seq_len.size(); ++i) {
      const SeqLenBudget& q = p.budget.per_seq_len[i];
      const PlanRow& f = row(p, q.seq_len, KvMode::kFull);
      const PlanRow& h = row(p, q.seq_len, KvMode::kHiSparse);
      CAPTURE(q.seq_len);
      // The HBM limit is the memory budget's (the same pool arithmetic, no cap set).
      CHECK(limit(f, "hbm") == static_cast<int64_t>(q.max_requests_full.value));
      CHECK(f.hbm_per_request.value == q.full_kv_bytes.value);
      CHECK(f.max_per_rank >= 1);
      CHECK(f.max_per_rank <= limit(f, "hbm"));
      CHECK(f.decode_tokens_per_s > 0);
      CHECK(f.at_max.step_ns > 0);
      // No indexer, no top-k, no swap-in, no PCIe for these models.
      CHECK(f.at_max.cost.indexer == 0);
      CHECK(f.at_max.cost.topk == 0);
      CHECK(f.at_max.cost.swap_in == 0);
      CHECK(f.at_max.cost.attention > 0);
      CHECK(f.at_max.cost.moe > 0);
      CHECK(h.binding_limit == kNotApplicable);
      CHECK(h.max_concurrency == 0);
      for (const auto& l : h.limits) CHECK(l.per_rank == -1);
    }
    // Throughput per instance at the binding limit = requests / TPOT.
    const PlanRow& f16 = row(p, 16384, KvMode::kFull);
    CHECK(f16.decode_tokens_per_s ==
          doctest::Approx(static_cast<double>(f16.max_concurrency) / (f16.at_max.step_ns * 1e-9)).epsilon(1e-9));
    // Every report renders and names the non-applicability.
    const std::string text = plan_table_text(plan_table(p), p.hisparse_not_applicable);
    CHECK(text.find("not applicable: no sparse indexer") != std::string::npos);
    PlanRunInfo info;
    CHECK(plan_to_json(p, info).find("\"hisparse_applicable\": false") != std::string::npos);
    CHECK(plan_to_markdown(p, info, {}).find("not applicable") != std::string::npos);
  }
}

TEST_CASE("plan gqa: decode attention reads K + V of every token on full layers, the window on sliding ones") {
  // gpt-oss-120b: 18 full + 18 sliding layers (window 128), K + V row 2,048 B per layer on one H200.
  const Scenario s = load_scenario("gptoss-120b-1xh200");
  const CostParams cost;  // built-in efficiencies: attention memory 0.6 of 4.8 TB/s
  const StepTimeModel m(s, cost, false, nullptr);
  const int64_t B = 8;
  // From 16K to 32K tokens only the 18 full layers read more: 8 requests × 16,384 more rows × 2,048 B each.
  const double extra_bytes = 8.0 * 16384 * 2048;
  const double per_layer_s = extra_bytes / (s.hardware.hbm_bytes_per_s * cost.efficiency.attention.memory);
  const double d_attention = static_cast<double>(m.step(B, 32768).cost.attention - m.step(B, 16384).cost.attention);
  CHECK(d_attention == doctest::Approx(18 * per_layer_s * 1e9).epsilon(1e-3));
  // A dense model with no sliding layer: llama's 32 layers all grow (8 KV heads × 128 × 2 × 2 = 4,096 B a row).
  const Scenario l = load_scenario("llama31-8b-1xh100");
  const StepTimeModel ml(l, cost, false, nullptr);
  const double dl = static_cast<double>(ml.step(B, 32768).cost.attention - ml.step(B, 16384).cost.attention);
  const double l_layer_s = 8.0 * 16384 * 4096 / (l.hardware.hbm_bytes_per_s * cost.efficiency.attention.memory);
  CHECK(dl == doctest::Approx(32 * l_layer_s * 1e9).epsilon(1e-3));
  // The step is non-decreasing in the batch (the SLO search relies on it).
  SimTime last = 0;
  for (int64_t b = 1; b <= 512; b *= 2) {
    const SimTime t = m.step(b, 65536).step_ns;
    CHECK(t >= last);
    last = t;
  }
}

TEST_CASE("plan gqa: qwen3-32b under tp 2 halves the query and KV heads per GPU and all-reduces") {
  const Scenario s = load_scenario("qwen3-32b-2xh200-tp2");
  const CapacityPlan p = plan_of(s);
  CHECK(p.layout.ranks == 1);
  CHECK(p.layout.attention_tp == 2);
  // 4 of 8 KV heads per GPU: row 2,048 B → each GPU reads half the KV of a tp-1 deployment.
  CHECK(p.budget.latent_row_bytes.value == 2048);
  bool warned = false;
  for (const auto& w : p.warnings) warned |= w.find("holds 4 of the 8 KV heads") != std::string::npos;
  CHECK(warned);
  // The same model at tp 1 on one GPU (2 × the KV row, 2 × the heads, no all-reduce) takes longer per step at the
  // same batch and context: attention TP really divides the per-GPU work.
  Scenario one = s;
  one.deployment.decode.gpus = one.deployment.decode.tp = 1;
  const CostParams cost;
  const StepTimeModel tp2(s, cost, false, nullptr), tp1(one, cost, false, nullptr);
  CHECK(tp2.step(16, 16384).cost.attention < tp1.step(16, 16384).cost.attention);
}

TEST_CASE("plan gqa: --strategies compares full KV, eviction, masking and compression from the new pool arithmetic") {
  const Scenario s = load_scenario("gptoss-120b-1xh200");
  const CapacityPlan p = plan_of(s, true);
  const MemoryBudget& b = p.budget;
  for (const StrategyRow& r : p.strategies.rows) {
    CAPTURE(r.name);
    CAPTURE(r.seq_len);
    CHECK(r.key != "hisparse");  // not applicable: no row
    CHECK(r.max_per_rank >= 0);
    if (r.key == "full") CHECK(r.hbm_per_request == full_kv_request_bytes(b, r.seq_len));
    if (r.key == "eviction") {
      // E = 2048 (the deployment's default top_k input): full layers keep 2,048, sliding layers 129.
      const int64_t kept = std::min<int64_t>(r.seq_len, 2048);
      CHECK(r.hbm_per_request == (kept * 18.0 + std::min<int64_t>(kept, 129) * 18.0) * 2048);
      CHECK(r.hbm_limit_per_rank == full_pool_requests(b, kept));
    }
    if (r.key == "masking") CHECK(r.hbm_limit_per_rank == full_pool_requests(b, r.seq_len));
    if (r.key == "compression") {
      // c = 4, S + R = 260 full precision on the 18 full layers; sliding layers keep their 129-token window.
      const double n = static_cast<double>(r.seq_len);
      CHECK(r.hbm_per_request == doctest::Approx(18 * (260 * 2048.0 + (n - 260) * 2048.0 / 4) + 18 * 129 * 2048.0));
    }
  }
  bool noted = false;
  for (const auto& n : p.strategies.notes) noted |= n.find("not applicable") != std::string::npos;
  CHECK(noted);
  // Masking attends K = 2,048 rows on full layers: its step is shorter than full KV's at 128K.
  const StrategyRow* full = nullptr;
  const StrategyRow* mask = nullptr;
  for (const StrategyRow& r : p.strategies.rows) {
    if (r.seq_len != 131072) continue;
    if (r.key == "full") full = &r;
    if (r.key == "masking") mask = &r;
  }
  REQUIRE(full);
  REQUIRE(mask);
  CHECK(mask->tpot_ms <= full->tpot_ms);
}
