// @brief The planner's decode step: the closed form of the one step model for a batch of equal requests (see
// step_time_model.h).
#include "sim/cost/step/step_time_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/pipeline_stages.h"
#include "sim/cost/step/dynamic_residency.h"

namespace hisparse::sim {

StepTimeModel::StepTimeModel(const Scenario& scenario, const CostParams& params, KvMode mode,
                             MissFraction miss_fraction, int64_t device_pool_tokens)
    : est_(pipeline_stage_scenario(scenario), params, mode), miss_fraction_(std::move(miss_fraction)),
      pp_(std::max(1, scenario.deployment.decode.pp)) {
  if (pp_ > 1) link_ = sim::stage_link(scenario, params);
  const HardwareSpec& hw = scenario.hardware;
  const bool hisparse = uses_host_pool(mode);
  page_ = std::max(1, scenario.deployment.page_size);
  if (mode == KvMode::kDynamic)
    device_pool_ = device_pool_tokens > 0
                       ? device_pool_tokens
                       : static_cast<int64_t>(compute_memory_budget(scenario, {}).device_pool_tokens.value);
  if (hisparse && !scenario.model.has_sparse_indexer())
    throw_error("{}: HiSparse step of model {}: not applicable, the model has no sparse indexer", scenario.source,
                scenario.model.name);
  if (hisparse && (!(hw.pcie.h2d_bulk_bytes_per_s > 0) || !(hw.pcie.d2h_bulk_bytes_per_s > 0)))
    throw_error("{}: hardware pcie h2d/d2h_bulk_bytes_per_s must be > 0 to plan HiSparse", scenario.source);
}

double StepTimeModel::h2d_rate(int64_t batch) const {
  if (!est_.hisparse()) return 0;
  const SwapInCopyCost& c = est_.params().swap_in_cost;
  if (c.calibrated) return std::min(c.copy_rate(batch), est_.h2d_link());
  // The uncalibrated call's own cap is the gathered-row rate (StepEstimator::miss_copy).
  return est_.h2d_rate(CopyCall{0, 0, est_.rank_scenario().hardware.pcie.gather_row_bytes_per_s});
}

SimTime StepTimeModel::h2d_fixed_ns(int64_t batch) const {
  const SwapInCopyCost& c = est_.params().swap_in_cost;
  const SimTime per_call = c.calibrated ? c.copy_latency_ns(batch) : est_.rank_scenario().hardware.pcie.latency_ns;
  return static_cast<SimTime>(est_.cost().offload_layers()) * per_call;
}

double StepTimeModel::misses_per_request(int64_t n) const {
  // DeepSeek-V4: the C4 layers select among n / 4 entries; their misses follow the miss model at that many entries
  // (assumed: a C4 selection over n / 4 entries misses as a DSA selection over as many tokens).
  const int64_t e = est_.entries(n);
  if (!est_.hisparse() || e <= est_.device_buffer() || !miss_fraction_) return 0;
  const double f = std::clamp(miss_fraction_(e), 0.0, 1.0);
  // The newest entry sits in its reserved slot, so at most min(e, K) − 1 selections per layer can miss.
  return static_cast<double>(std::min<int64_t>(e, est_.top_k()) - 1) * est_.cost().offload_layers() * f;
}

PipelineCycle StepTimeModel::pipeline(int64_t B, const ContextMix& mix, int64_t instance_requests) const {
  const int64_t b = micro_batch_size(pp_, B);
  const int64_t inst = instance_requests > 0 ? micro_batch_size(pp_, instance_requests) : 0;
  const SimTime stage = b > 0 ? stage_step(b, mix, inst).step_ns : 0;
  const Scenario& rs = est_.rank_scenario();
  const int tp = std::max(1, rs.deployment.decode.tp);
  const SimTime hop = pp_ > 1 ? stage_hop_ns(link_, stage_activation_bytes(rs.model, b), tp) : 0;
  // The next-token ids (int64 per request) ride back from the last stage to the first.
  const SimTime back = pp_ > 1 ? stage_hop_ns(link_, static_cast<double>(b) * 8.0, 1) : 0;
  return pipeline_cycle(pp_, B, stage, hop, back);
}

StepEstimate StepTimeModel::step(int64_t B, const ContextMix& mix, int64_t instance_requests) const {
  if (pp_ <= 1 || B <= 0) return stage_step(B, mix, instance_requests);
  const int64_t b = micro_batch_size(pp_, B);
  const int64_t inst = instance_requests > 0 ? micro_batch_size(pp_, instance_requests) : 0;
  StepEstimate e = stage_step(b, mix, inst);
  const PipelineCycle c = pipeline(B, mix, instance_requests);
  // A token's critical path: the binding stage's terms on each of the pp stages, the hops and any wait under sync.
  StepCost total;
  for (int i = 0; i < pp_; ++i) total += e.cost;
  total.sync += c.cycle_ns - total.critical_path();
  // Per GPU per cycle: a stage runs every micro-batch once.
  const auto m = static_cast<double>(c.micro_batches);
  e.misses *= m;
  e.h2d_bytes *= m;
  e.backup_bytes *= m;
  e.cost = total;
  e.step_ns = c.cycle_ns;
  e.tpot_ns = static_cast<SimTime>(std::llround(static_cast<double>(c.cycle_ns) / e.accepted_tokens));
  const double requests = instance_requests > 0 ? static_cast<double>(instance_requests)
                                                 : static_cast<double>(B) * est_.layout().ranks;
  e.tokens_per_s = c.cycle_ns > 0 ? requests * e.accepted_tokens * 1e9 / static_cast<double>(c.cycle_ns) : 0;
  e.batch = B;
  return e;
}

StepEstimate StepTimeModel::stage_step(int64_t B, const ContextMix& mix, int64_t instance_requests) const {
  StepEstimate e;
  if (B > 0) {
    // Dynamic residency: only the requests in swap mode (the longest) load misses; resident ones hit their full KV.
    const int64_t swap = est_.dynamic() ? swap_requests(B, mix) : B;
    double misses = 0;
    if (est_.dynamic()) {
      const std::vector<double> share = swap_share_by_class(mix, static_cast<double>(swap) / static_cast<double>(B));
      for (size_t c = 0; c < mix.classes.size(); ++c)
        misses += static_cast<double>(B) * mix.classes[c].weight * share[c] * misses_per_request(mix.classes[c].seq_len);
    } else if (est_.hisparse()) {
      misses = static_cast<double>(B) * mix.expect([&](int64_t n) { return misses_per_request(n); });
    }
    e = est_.closed_form(est_.batch(B, mix, static_cast<double>(swap)), misses, instance_requests);
  }
  e.batch = B;
  e.seq_len = std::llround(mix.mean_seq_len());
  return e;
}

int64_t StepTimeModel::swap_requests(int64_t B, const ContextMix& mix) const {
  if (!est_.dynamic()) return 0;
  return steady_swap_requests(B, mix, device_pool_, est_.device_buffer(), page_, est_.cost().compress_ratio());
}

int64_t StepTimeModel::max_resident_batch(const ContextMix& mix, int64_t cap) const {
  if (!est_.dynamic()) return 0;
  return sim::max_resident_batch(mix, device_pool_, est_.device_buffer(), page_, cap, est_.cost().compress_ratio());
}

int64_t StepTimeModel::max_batch_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const {
  // Every term of the step is non-decreasing in B, so the fitting batches form a prefix.
  return largest_fitting(cap, [&](int64_t B) { return step(B, mix).tpot_ns <= slo_ns; });
}

int64_t StepTimeModel::max_batch_io_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const {
  return largest_fitting(cap, [&](int64_t B) {
    const StepEstimate e = step(B, mix);
    return e.h2d_transfer_ns <= slo_ns && e.backup_transfer_ns <= slo_ns;
  });
}

std::string describe_pipeline(const Scenario& s, const StepTimeModel& m, int64_t n) {
  if (m.pp() <= 1) return "";
  const PipelineCycle c = m.pipeline(1, ContextMix::single(n));
  const PipelineStage st = binding_stage(s.model, m.pp());
  return fmt::format(
      "pipeline parallelism: pp {} stages of tp {}; {} binds the memory budget and paces every stage; a step is "
      "the cycle of up to {} micro-batches through the stages (SGLang's event_loop_pp; sim/cost/step/pipeline_step.h). "
      "At batch 1 and {} tokens (modelled): stage {:.2f} ms, hop {:.1f} us ({}), cycle {:.2f} ms, bubble {:.0f} %",
      m.pp(), s.deployment.decode.tp, describe_stage(s.model, st, m.pp()), m.pp(), n, c.stage_ns * 1e-6,
      c.hop_ns * 1e-3, m.stage_link().label, c.cycle_ns * 1e-6, c.bubble * 100);
}

}  // namespace hisparse::sim
