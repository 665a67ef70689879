// @brief Per-op weight precision in the MLA cost model: routed experts read at the model's expert precision (NVFP4
// reads fewer bytes than FP8 at the same batch), the cost model's weight_bytes_per_param when the model states none,
// and bf16 projections read twice the fp8 bytes.
#include <doctest/doctest.h>

#include "core/scenario_loader.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

/// The MoE phase's compute (experts, shared expert, router, LM head) of the GLM-5 node at `tokens` per GPU, with the
/// routed experts at `expert_bpp` bytes per parameter (0 = unset) and no step calibration (every op a roofline).
SimTime moe_compute(double expert_bpp, double tokens) {
  Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  s.model.expert_weight_bytes_per_param = expert_bpp;
  CostParams p;  // weight_bytes_per_param 1.0 (fp8), no step calibration
  const double ranks = s.deployment.decode.dp_attention;
  return DecodeCostModel(s, p, true).moe_phase(tokens * ranks, tokens).compute;
}

}  // namespace

TEST_CASE("cost: NVFP4 routed experts read fewer bytes than FP8 at the same batch; unset means the cost model's") {
  for (double tokens : {1.0, 8.0, 32.0}) {
    CAPTURE(tokens);
    const SimTime fp8 = moe_compute(1.0, tokens), nvfp4 = moe_compute(0.5625, tokens);
    // Decode at these batches is bound by the expert weights' bytes: 0.5625 of them take less time.
    CHECK(nvfp4 < fp8);
    // Unset: the cost model's weight_bytes_per_param (1.0), exactly the FP8 figure.
    CHECK(moe_compute(0, tokens) == fp8);
  }
  // At 8 tokens per GPU each GPU reads about 7 of its 32 experts per MoE layer (1 − (255/256)^64 of them), 3 × 6144
  // × 2048 parameters each, in a memory-bound kernel: fewer bytes per parameter is always less time.
  CHECK(moe_compute(0.25, 8.0) < moe_compute(0.5625, 8.0));
}

TEST_CASE("cost: bf16 projections (dense_weight_bytes_per_param 2) take longer than the fp8 ones at small batch") {
  Scenario s = load_scenario("glm51-8xh200-tp8-r11");
  CostParams p;
  GpuBatch b{1, 32768.0, 2048.0, 0};
  const SimTime fp8 = DecodeCostModel(s, p, false).gpu_phases(b).attention;
  s.model.dense_weight_bytes_per_param = 2;
  const SimTime bf16 = DecodeCostModel(s, p, false).gpu_phases(b).attention;
  // One token: every projection is bound by its weight bytes, twice as many in bf16.
  CHECK(bf16 > fp8);
}
