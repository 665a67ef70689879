// @brief Speculative decoding with the MTP layer: accepted tokens per step and the draft passes (speculative.h).
#include "sim/cost/step/speculative.h"

#include <algorithm>
#include <cmath>

#include "sim/cost/step/step_estimate.h"

namespace hisparse::sim {

double mtp_accepted_tokens(int draft_tokens, double acceptance) {
  // Draft i (1-based) survives iff drafts 1..i are all accepted: probability a^i; the verify pass adds its own token.
  double e = 1, p = 1;
  for (int i = 1; i <= draft_tokens; ++i) {
    p *= acceptance;
    e += p;
  }
  return e;
}

SimTime StepEstimator::draft_ns(const GpuBatch& busiest, double instance_requests, double max_gpu_requests) const {
  if (mtp_draft_ == 0 || busiest.requests <= 0) return 0;
  // One pass of the MTP layer: an average decoder layer of the target at one token per request (its attention side
  // with the attention-TP all-reduce, and its share of the MoE phase without the LM head and the step's fixed
  // overhead), then the LM head that proposes the token.
  const double layers = cost_.layers();
  const GpuPhases p = cost_.gpu_phases(busiest);
  const SimTime allreduce = attention_allreduce_ns(layout_.attention_tp, collective_bytes_per_s_, internode_,
                                                   rank_scenario_.model, params_, busiest.requests);
  const DecodeCostModel::MoeTime m = cost_.moe_phase(instance_requests, max_gpu_requests);
  const SimTime lm = cost_.lm_head_ns(instance_requests);
  const SimTime fixed = params_.step_overhead_ns(layout_.ranks > 1);
  const SimTime moe_layer = std::max<SimTime>(0, m.compute + m.all_to_all - lm - fixed);
  const double layer = static_cast<double>(p.compute() + allreduce + moe_layer) / layers;
  return mtp_draft_ * (static_cast<SimTime>(std::llround(layer)) + lm);
}

}  // namespace hisparse::sim
