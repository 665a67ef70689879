// @brief DeepSeek-V4's mHC mixing and hash routing in the step (sim/cost/step/decode_cost_model_dsv4.cpp): both priced as
// MoE-phase terms labelled modelled (roofline), each by hand at 64 tokens per GPU; no such term for DeepSeek-V3.2.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/scenario_loader.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {
const MoeTerm* find_term(const std::vector<MoeTerm>& terms, const std::string& name) {
  for (const MoeTerm& t : terms)
    if (t.name == name) return &t;
  return nullptr;
}
}  // namespace

TEST_CASE("dsv4 step: mHC mixing and hash routing by hand at 64 tokens per GPU") {
  const Scenario s = load_scenario("dsv4-flash-8xh200");  // hidden 4096, 43 layers, 6 experts per token; H200
  const CostParams p;  // built-in defaults: efficiency.dense {0.7, 0.7}, efficiency.topk {0.4, 0.4}, 520 ns graph gap
  const DecodeCostModel m(s, p, false);
  const std::vector<MoeTerm> terms = m.moe_terms(8 * 64, 64);
  const MoeTerm* mhc = find_term(terms, "mhc_mixing");
  const MoeTerm* hash = find_term(terms, "hash_routing");
  REQUIRE(mhc != nullptr);
  REQUIRE(hash != nullptr);
  // hc_mult 4: hc_dim = 4 × 4096 = 16,384, mix = (2 + 4) × 4 = 24; H200 4.8 TB/s × 0.7 = 3.36e12 B/s.
  // hc_pre: 24 × 16,384 × 4 B of fp32 weights + 64 × (16,384 × 2 + 4096 × 2 + (8 + 16) × 4) = 1,572,864 + 2,627,584
  //   = 4,200,448 B → 1,250.1 ns → 1,251 (its 50.3 MFLOP at tf32 = 989e12 / 2 × 0.7 take 0.15 µs: memory-bound)
  //   + 520 = 1,771 ns.
  // hc_post: 64 × (4096 × 2 + 2 × 16,384 × 2 + (4 + 16) × 4) = 4,723,712 B → 1,405.9 → 1,406 + 520 = 1,926 ns.
  // hc_head: 4 × 16,384 × 4 + 64 × (16,384 × 2 + 4096 × 2) = 2,883,584 B → 858.2 → 859 + 520 = 1,379 ns.
  // Expected: (1,771 + 1,926) × 2 × 43 + 1,379 = 319,321 ns.
  CHECK(mhc->ns == 319321);
  // Hash routing: 3 layers × (64 × (8 + 6 × 4) = 2,048 B at 4.8 TB/s × 0.4 → 1.07 ns → 2 ns, + 520) = 3 × 522.
  CHECK(hash->ns == 1566);
  // Expected: both labelled modelled (roofline), neither counted as communication.
  CHECK(mhc->source.find("modelled (roofline") == 0);
  CHECK(hash->source.find("modelled (roofline") == 0);
  CHECK_FALSE(mhc->communication);
  CHECK_FALSE(hash->communication);
  // Expected: the note plan and advise print names both as modelled.
  CHECK(dsv4_modelled_terms_note(s).find("modelled (roofline") != std::string::npos);
}

TEST_CASE("dsv4 step: no mHC or hash-routing term for DeepSeek-V3.2; NVFP4 V4 attention labelled roofline") {
  const Scenario v32 = load_scenario("dsv32-8xh200-1tb");
  const CostParams p;
  const DecodeCostModel m(v32, p, false);
  const std::vector<MoeTerm> terms = m.moe_terms(8 * 64, 64);
  // Expected: DeepSeek-V3.2 has neither (no hyper-connections, every layer routes by score), and no V4 note.
  CHECK(find_term(terms, "mhc_mixing") == nullptr);
  CHECK(find_term(terms, "hash_routing") == nullptr);
  CHECK(dsv4_modelled_terms_note(v32).empty());
  // Expected: an NVFP4 KV deployment of V4 is told its attention is the roofline (no measured NVFP4 kernel).
  Scenario nv = load_scenario("dsv4-flash-8xh200");
  nv.deployment.kv_dtype = KvDtype::kNvfp4;
  CHECK(dsv4_modelled_terms_note(nv).find("NVFP4 KV: attention modelled (roofline") != std::string::npos);
}
