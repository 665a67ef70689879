// @brief The planner's decode step: the closed form of the one step model for a batch of equal requests (see
// step_time_model.h).
#include "sim/cost/step_time_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace hisparse::sim {

StepTimeModel::StepTimeModel(const Scenario& scenario, const CostParams& params, bool hisparse,
                             MissFraction miss_fraction)
    : est_(scenario, params, hisparse ? KvMode::kHiSparse : KvMode::kFull), miss_fraction_(std::move(miss_fraction)) {
  const HardwareSpec& hw = scenario.hardware;
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
  return static_cast<SimTime>(est_.cost().layers()) * per_call;
}

double StepTimeModel::misses_per_request(int64_t n) const {
  if (!est_.hisparse() || n <= est_.device_buffer() || !miss_fraction_) return 0;
  const double f = std::clamp(miss_fraction_(n), 0.0, 1.0);
  // The newest token sits in its reserved slot, so at most min(n, K) − 1 selections per layer can miss.
  return static_cast<double>(std::min<int64_t>(n, est_.top_k()) - 1) * est_.cost().layers() * f;
}

StepEstimate StepTimeModel::step(int64_t B, const ContextMix& mix, int64_t instance_requests) const {
  StepEstimate e;
  if (B > 0) {
    const double misses =
        est_.hisparse() ? static_cast<double>(B) * mix.expect([&](int64_t n) { return misses_per_request(n); }) : 0;
    e = est_.closed_form(est_.batch(B, mix), misses, instance_requests);
  }
  e.batch = B;
  e.seq_len = std::llround(mix.mean_seq_len());
  return e;
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

}  // namespace hisparse::sim
