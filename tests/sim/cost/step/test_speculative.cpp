// @brief Speculative decoding with the MTP layer (sim/cost/step/speculative.h) and IndexShare's shared top-k in the one step
// model (sim/cost/step/step_estimate.h): accepted tokens, the verify pass, TPOT worked by hand, the draft layer's memory,
// the 21 selecting layers of GLM-5.2 and the shared layers' prefetch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/cost/step/speculative.h"
#include "sim/cost/step/step_estimate.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

CostParams uncalibrated(Scenario* s) {
  CostParams p;
  load_cost_terms("auto", *s, &p);
  apply_calibrations("none", "none", s, &p);
  p.overlap = OverlapMode::kNone;
  return p;
}

GpuBatch batch_of(const StepEstimator& est, int64_t requests, int64_t n) {
  GpuBatch b;
  for (int64_t i = 0; i < requests; ++i) est.add_request(b, n);
  return b;
}

Scenario with_mtp(Scenario s, int d, double a) {
  s.deployment.mtp_draft_tokens = d;
  s.deployment.mtp_acceptance = a;
  return s;
}

}  // namespace

TEST_CASE("accepted tokens per step: 1 + a + ... + a^d") {
  // d = 3, a = 0.7: 1 + 0.7 + 0.49 + 0.343 = 2.533 (by hand). No drafts: 1. Every draft kept: d + 1. None kept: 1.
  CHECK(mtp_accepted_tokens(3, 0.7) == doctest::Approx(2.533).epsilon(1e-12));
  CHECK(mtp_accepted_tokens(0, 0.9) == 1.0);
  CHECK(mtp_accepted_tokens(4, 1.0) == 5.0);
  CHECK(mtp_accepted_tokens(4, 0.0) == 1.0);
  // DeepSeek-V3's one draft at its reported 85 %: 1.85 tokens per step.
  CHECK(mtp_accepted_tokens(1, 0.85) == doctest::Approx(1.85));
}

TEST_CASE("TPOT with MTP, worked by hand: one request's verify pass is a 4-request step, plus 3 draft passes, / 2.533") {
  // DeepSeek-V3.2 on 8 × H200, full KV, n = 16384, d = 3 draft tokens at a = 0.7. The verify pass runs 1 + 3 = 4
  // positions of the one request: every projection, indexer query, top-k and attention of 4 queries, the MoE over 4
  // tokens per rank — exactly the step of 4 requests of the same length without MTP (S4). Then 3 draft passes (D).
  // The step yields E = 2.533 tokens, so TPOT = (S4 + D) / 2.533.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.hisparse_enabled = false;
  const CostParams p = uncalibrated(&s);
  const Scenario sm = with_mtp(s, 3, 0.7);
  const StepEstimator plain(s, p, KvMode::kFull), mtp(sm, p, KvMode::kFull);
  const int64_t n = 16384;
  const StepEstimate s4 = plain.closed_form(batch_of(plain, 4, n), 0);
  const StepEstimate s1 = plain.closed_form(batch_of(plain, 1, n), 0);
  const StepEstimate m1 = mtp.closed_form(batch_of(mtp, 1, n), 0);
  REQUIRE(m1.cost.draft > 0);
  CHECK(m1.accepted_tokens == doctest::Approx(2.533));
  CHECK(m1.step_ns == s4.step_ns + m1.cost.draft);
  CHECK(m1.cost.critical_path() == m1.step_ns);
  CHECK(m1.tpot_ns == std::llround(static_cast<double>(s4.step_ns + m1.cost.draft) / 2.533));
  // Three passes of one layer (of 61) and the LM head cost less than a step: far less than the 1.533 extra tokens.
  CHECK(m1.cost.draft < s1.step_ns / 2);
  // At one request the step is bound by reading the weights, so the verify pass is nearly free and TPOT falls.
  CHECK(m1.tpot_ns < s1.tpot_ns);
  CHECK(s1.tpot_ns == s1.step_ns);  // without MTP, TPOT is the step
  // The instance's tokens per second count every accepted token.
  CHECK(m1.tokens_per_s == doctest::Approx(s1.tokens_per_s * static_cast<double>(s1.step_ns) * 2.533 /
                                           static_cast<double>(m1.step_ns)).epsilon(1e-9));
}

TEST_CASE("MTP with HiSparse: each of the 1 + d positions selects and misses as a decode step") {
  // d = 2: 3 positions per request, so a step's misses are 3 × the decode step's (the stated upper bound), and so is
  // the copy; the backup moves E = 1 + 0.5 + 0.25 = 1.75 accepted tokens' rows per request.
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  const CostParams p = uncalibrated(&s);
  const Scenario sm = with_mtp(s, 2, 0.5);
  const StepEstimator plain(s, p, KvMode::kHiSparse), mtp(sm, p, KvMode::kHiSparse);
  const GpuBatch b = batch_of(mtp, 8, 65536);
  const StepEstimate e = mtp.closed_form(b, 1000);
  const StepEstimate e0 = plain.closed_form(batch_of(plain, 8, 65536), 1000);
  CHECK(e.misses == 3000);
  CHECK(e.h2d_bytes == doctest::Approx(3 * e0.h2d_bytes));
  CHECK(e.backup_bytes == doctest::Approx(1.75 * e0.backup_bytes));
  CHECK(mtp.rank_compute(b).phases.swap_in > plain.rank_compute(b).phases.swap_in);  // hit detection per position
}

TEST_CASE("a model without an MTP layer cannot draft") {
  // Llama 3.1 8B has no MTP layer (mtp_layers 0): drafting with it is an error naming the model, not a silent no-op.
  Scenario s = load_scenario("llama31-8b-1xh100");
  const CostParams p = uncalibrated(&s);
  const Scenario sm = with_mtp(s, 2, 0.5);
  CHECK_THROWS_WITH_AS(StepEstimator(sm, p, KvMode::kFull), doctest::Contains("has no MTP layer"), Error);
}

TEST_CASE("GLM-5.2: the indexer and top-k run in 21 of 78 layers, indexer keys are cached for 21 + 1 MTP layer") {
  // index_topk_freq 4, index_skip_topk_offset 3: anchors 0, 1, 2, 6, 10, ..., 74 (3 + 18 = 21). Latent rows stay on
  // all 78 + 1 MTP layers; indexer keys only on the anchors and the MTP layer (SGLang #30531).
  const Scenario s = load_scenario("glm52-2x8xh200-tp16");
  CHECK(s.model.topk_anchor_layers() == 21);
  for (int l : {0, 1, 2, 6, 10, 74}) CHECK(s.model.is_topk_anchor(l));
  for (int l : {3, 4, 5, 7, 75, 77}) CHECK_FALSE(s.model.is_topk_anchor(l));
  CHECK(s.model.indexer_key_layers() == 22);
  const MemoryBudget b = compute_memory_budget(s);
  CHECK(b.indexer_bytes_per_token.value == 22 * 132);
  CHECK(b.latent_bytes_per_token.value == 79 * 1152);
  CHECK(b.full_cell_bytes.value == 79 * 1152 + 22 * 132);
  // The indexer's time is that of 21 selecting layers: a GLM-5 with every layer selecting pays 78 / 21 of it.
  Scenario every = s;
  every.model.topk_layer_group = 1;
  Scenario sc = s;
  const CostParams p = uncalibrated(&sc);
  const StepEstimator shared(s, p, KvMode::kFull), all(every, p, KvMode::kFull);
  CHECK(shared.cost().selecting_layers() == 21);
  const GpuBatch g = batch_of(shared, 4, 131072);
  const double ratio = static_cast<double>(all.rank_compute(g).phases.indexer) /
                       static_cast<double>(shared.rank_compute(g).phases.indexer);
  CHECK(ratio == doctest::Approx(78.0 / 21.0).epsilon(1e-6));
}

TEST_CASE("IndexShare's prefetch: the shared layers' share of the copy hides under their attention") {
  // GLM-5.2, HiSparse, serial overlap: 57 of 78 layers reuse a top-k, so their copies (57/78 of the step's copy) start
  // on a side stream after the anchor's top-k and hide under the attention before each shared layer, at most that
  // attention's 57/78. The copy C below is long enough that the attention bounds it: hidden = attention × 57/78.
  Scenario s = load_scenario("glm52-2x8xh200-tp16");
  const CostParams p = uncalibrated(&s);
  const StepEstimator est(s, p, KvMode::kHiSparse);
  const RankCompute c = est.rank_compute(batch_of(est, 4, 262144));
  const double share = 57.0 / 78.0;
  CHECK(c.prefetch_share == doctest::Approx(share));
  const SimTime window = std::llround(static_cast<double>(c.phases.attention) * share);
  CHECK(c.prefetch_window == window);
  const SimTime C = 10 * c.phases.attention;  // copy-bound
  const RankEnd end = est.rank_end(c, c.io_ready, c.io_ready + C, true);
  CHECK(end.prefetch_hidden == window);
  CHECK(end.h2d == C - window);
  CHECK(end.done == c.io_ready + C - window + c.tail);
  // A short copy hides whole in proportion: 57/78 of it.
  const SimTime short_copy = c.phases.attention / 10;
  const RankEnd small = est.rank_end(c, c.io_ready, c.io_ready + short_copy, true);
  CHECK(small.prefetch_hidden == std::llround(static_cast<double>(short_copy) * share));
  // DeepSeek-V3.2 selects in every layer: nothing to prefetch.
  Scenario d = load_scenario("dsv32-8xh200-1tb");
  const CostParams pd = uncalibrated(&d);
  const StepEstimator dsv(d, pd, KvMode::kHiSparse);
  const RankCompute cd = dsv.rank_compute(batch_of(dsv, 4, 65536));
  CHECK(dsv.rank_end(cd, cd.io_ready, cd.io_ready + 1000000, true).prefetch_hidden == 0);
}
