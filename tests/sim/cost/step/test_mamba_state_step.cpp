// @brief The hybrid Mamba family's state slot is one figure for the budget and the step model: the step model reads
// and writes back every running request's slot in each linear-attention layer (Qwen3-Coder-Next on 2 × H200, TP 2).
#include <doctest/doctest.h>

#include <cmath>

#include "core/gqa_memory_budget.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("mamba state: the budget's slot is what the step model reads and writes back per linear layer") {
  const Scenario s = load_scenario("qwen3next-2xh200-tp2");
  // One layer's slot on one of 2 GPUs (attention TP 2): conv (2 × 16 × 128 + 32 × 128) / 2 × (4 − 1) × 2 = 24,576 B,
  // SSM 32 / 2 × 128 × 128 = 262,144 fp32 values = 1,048,576 B; 36 linear layers of it are the budget's slot.
  const MambaLayerState st = mamba_layer_state(s.model, 2);
  CHECK(st.conv_bytes == 24576);
  CHECK(st.ssm_elements == 262144);
  CHECK(st.bytes() == 24576 + 1048576);
  CHECK(compute_memory_budget(s, {}).mamba_state_per_request.value == 36.0 * st.bytes());

  // The step model: the same model with a state of zero bytes differs only by the state traffic. 64 requests move
  // 2 × 64 × 1,073,152 B per linear layer; at 4 FLOPs per SSM value (1,048,576 per request) the kernel is memory-bound
  // (0.49 FLOP/B), so at the attention kernels' memory efficiency (CostParams' default 0.6) the 36 layers add
  // 36 × ceil(bytes / (hbm_bytes_per_s × 0.6)) ns.
  Scenario stateless = s;
  stateless.model.linear_num_key_heads = stateless.model.linear_num_value_heads = 0;
  const CostParams params;
  REQUIRE(params.efficiency.attention.memory == 0.6);
  const DecodeCostModel with(s, params, false), without(stateless, params, false);
  const GpuBatch b{64, 64 * 4096.0, 64 * 4096.0, 0, 0, 0};
  const double bytes = 2.0 * 64 * 1073152;
  const double per_layer_ns = std::ceil(bytes / (s.hardware.hbm_bytes_per_s * 0.6) * 1e9);
  const auto added = static_cast<double>(with.gpu_phases(b).attention - without.gpu_phases(b).attention);
  CHECK(added == doctest::Approx(36 * per_layer_ns).epsilon(1e-6));
  // Twice the requests, twice the state traffic (up to the per-kernel ns rounding).
  const GpuBatch b2{128, 128 * 4096.0, 128 * 4096.0, 0, 0, 0};
  const auto added2 = static_cast<double>(with.gpu_phases(b2).attention - without.gpu_phases(b2).attention);
  CHECK(added2 == doctest::Approx(2 * added).epsilon(1e-3));
}
