// @brief The pipelined decode cycle, worked by hand: micro-batches, the latency and occupancy bounds, the bubble; the
// stage-to-stage hop over the NICs of a two-node PP2-TP8; the planner's step of that deployment is the cycle of its
// stage step.
#include <doctest/doctest.h>

#include <cmath>

#include "core/pipeline_stages.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/cost/step/pipeline_step.h"
#include "sim/cost/step/step_time_model.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("pipeline cycle: one request on two stages goes through both and back; the other stage idles") {
  // Expected: batch 1 is one micro-batch; latency = 2 × 10 ms + one hop (0.1 ms) + the return (0.05 ms) = 20.15 ms,
  // occupancy = 1 × (10 + 0.1) = 10.1 ms, so the latency binds; a stage works 10 of 20.15 ms: bubble 1 − 10 / 20.15.
  const PipelineCycle c = pipeline_cycle(2, 1, 10'000'000, 100'000, 50'000);
  CHECK(c.micro_batches == 1);
  CHECK(c.micro_batch == 1);
  CHECK(c.latency_ns == 20'150'000);
  CHECK(c.occupancy_ns == 10'100'000);
  CHECK(c.cycle_ns == 20'150'000);
  CHECK(c.bubble == doctest::Approx(1.0 - 10.0 / 20.15));
}

TEST_CASE("pipeline cycle: enough requests for every micro-batch fill the stages; the sends set the rest") {
  // Expected: 6 requests on 2 stages are 2 micro-batches of 3; occupancy = 2 × (10 + 0.1) = 20.2 ms exceeds the
  // latency 20.15 ms, so a stage is busy 20 of 20.2 ms: bubble 1 − 20 / 20.2 (the blocking sends).
  const PipelineCycle c = pipeline_cycle(2, 6, 10'000'000, 100'000, 50'000);
  CHECK(c.micro_batches == 2);
  CHECK(c.micro_batch == 3);
  CHECK(c.cycle_ns == 20'200'000);
  CHECK(c.bubble == doctest::Approx(1.0 - 20.0 / 20.2));
  // Four stages, two requests: two micro-batches of one, half the stages' time idle at least.
  const PipelineCycle q = pipeline_cycle(4, 2, 5'000'000, 0, 0);
  CHECK(q.micro_batches == 2);
  CHECK(q.micro_batch == 1);
  CHECK(q.cycle_ns == 20'000'000);  // 4 × 5 ms: the latency bound
  CHECK(q.bubble == doctest::Approx(0.5));
  // Seven requests on four stages: micro-batches of ceil(7 / 4) = 2.
  CHECK(micro_batch_size(4, 7) == 2);
  CHECK(micro_batch_size(4, 0) == 0);
  // One stage is no pipeline: the cycle is the stage and there is no hop and no bubble.
  const PipelineCycle one = pipeline_cycle(1, 5, 7'000'000, 100'000, 50'000);
  CHECK(one.cycle_ns == 7'000'000);
  CHECK(one.bubble == doctest::Approx(0.0));
}

TEST_CASE("pipeline step: PP2-TP8 on two H20 nodes hops over the NICs; the step is the stage step's cycle") {
  Scenario s = load_scenario("dsv4-pro-16xh20-pp2-tp8");
  CostParams p;
  load_cost_terms("auto", s, &p);
  const StageLink link = stage_link(s, p);
  // Expected: the instance spans 2 nodes, so the stage boundary crosses them: each GPU's share of its node's NICs,
  // 8 × 400 Gb/s / 8 bits / 8 GPUs = 50 GB/s (below NVLink's 450 GB/s), at the NIC's per-message cost.
  CHECK(link.internode);
  CHECK(link.bytes_per_s == doctest::Approx(50e9));
  CHECK(link.latency_ns == s.hardware.nic.per_message_ns);
  // One request: hidden states + residual in bf16 = 7168 × 2 × 2 = 28,672 B; each of 8 GPUs sends 3,584 B at 50 GB/s
  // (71.68 ns) and the receiver all-gathers the other 7 / 8 (25,088 B) over NVLink at 450 GB/s (55.75 ns).
  CHECK(stage_activation_bytes(s.model, 1) == doctest::Approx(28672.0));
  const double hop = static_cast<double>(s.hardware.nic.per_message_ns) + 3584.0 / 50e9 * 1e9 +
                     static_cast<double>(p.all_reduce_latency_ns(false)) + 25088.0 / 450e9 * 1e9;
  CHECK(stage_hop_ns(link, 28672.0, 8) == std::llround(hop));

  const StepTimeModel m(s, p, false, nullptr);
  REQUIRE(m.pp() == 2);
  for (int64_t B : {1, 2, 8}) {
    CAPTURE(B);
    const PipelineCycle c = m.pipeline(B, ContextMix::single(8192));
    const StepEstimate e = m.step(B, 8192);
    // Expected: the step is the cycle; its terms are the stage's twice, the hops and any wait under sync.
    CHECK(e.step_ns == c.cycle_ns);
    CHECK(e.cost.critical_path() == e.step_ns);
    CHECK(c.micro_batch == (B + 1) / 2);
    CHECK(c.latency_ns == 2 * c.stage_ns + c.hop_ns + c.return_ns);
    // The stage is the binding stage's 31 + 1 layers on 8 GPUs.
    CHECK(m.rank_scenario().model.layers == 31);
    CHECK(m.layout().gpus == 8);
  }
  // Batch 1 against a whole-model TP8 step on one node (no pipeline): the two stages of half the layers each take
  // about as long as the whole model does; the pipeline adds the hops, so it is slower, by less than 10 %.
  Scenario whole = s;
  whole.deployment.decode.pp = 1;
  whole.deployment.decode.gpus = 8;
  const StepTimeModel w(whole, p, false, nullptr);
  const double ratio = static_cast<double>(m.step(1, 8192).step_ns) / static_cast<double>(w.step(1, 8192).step_ns);
  CHECK(ratio > 1.0);
  CHECK(ratio < 1.1);
}
