// @brief The one model of a decode step, in the pieces the planner's closed form and the serving engine share
// (see step_estimate.h).
#include "sim/cost/step/step_estimate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "sim/cost/step/dynamic_residency.h"
#include "sim/cost/step/speculative.h"
#include "sim/cost/terms/zero_copy_sm_share.h"

namespace hisparse::sim {

StepEstimator::StepEstimator(const Scenario& scenario, const CostParams& params, KvMode mode)
    : rank_scenario_(sim::rank_scenario(scenario)),
      params_(params),
      hisparse_(uses_host_pool(mode)),
      dynamic_(mode == KvMode::kDynamic),
      cost_(rank_scenario_, params_, hisparse_),
      resident_cost_(rank_scenario_, params_, false, /*hisparse_server=*/uses_host_pool(mode)),
      layout_(rank_layout(scenario)) {
  const HardwareSpec& hw = scenario.hardware;
  collective_bytes_per_s_ = rank_scenario_.hardware.nvlink_bytes_per_s;
  internode_ = collective_link(scenario).nodes > 1;
  row_bytes_ = cost_.kv_row_bytes();
  top_k_ = hisparse_ ? scenario.deployment.hisparse.top_k : scenario.model.top_k;
  window_ = family_of(scenario).attention_window(scenario.model);
  compress_ = cost_.compress_ratio();
  H_ = scenario.deployment.hisparse.device_buffer_size;
  const ModelSpec& m = scenario.model;
  mtp_draft_ = scenario.deployment.mtp_draft_tokens;
  if (mtp_draft_ > 0 && m.mtp_layers == 0)
    throw_error("{}: mtp_draft_tokens {}: model {} has no MTP layer (mtp_layers 0) to draft with", scenario.source,
                mtp_draft_, m.name);
  mtp_accepted_ = mtp_accepted_tokens(static_cast<int>(mtp_draft_), scenario.deployment.mtp_acceptance);
  // IndexShare: the layers that reuse an anchor's top-k, whose copies the side stream may prefetch.
  // Without the prefetch (SGLANG_DISABLE_HISPARSE_PREFETCH) every layer copies its own misses inside its swap-in.
  if (hisparse_ && m.layers > 0 && scenario.deployment.hisparse_prefetch)
    shared_share_ = static_cast<double>(m.layers - m.topk_anchor_layers()) / static_cast<double>(m.layers);
  // Every GPU of a NUMA node copies at once in a lockstep step: each gets its max-min fair share of the node's DRAM,
  // times the cross-node factor when its host pool sits on the other socket.
  placement_ = {layout_.gpus_per_numa, !scenario.deployment.host_pool_remote_numa};
  host_layout_ = scenario.deployment.host_layout;
  // A hardware file without PCIe rates (full KV only) has no host path.
  h2d_link_ = hw.pcie.h2d_bulk_bytes_per_s > 0 ? host_path_bytes_per_s(hw, true, placement_) : 0;
  d2h_rate_ = hw.pcie.d2h_bulk_bytes_per_s > 0 ? host_path_bytes_per_s(hw, false, placement_) : 0;
}

void StepEstimator::add_request(GpuBatch& b, int64_t n, bool swap) const {
  ++b.requests;
  if (hisparse_ && swap) ++b.swap;
  b.sum_n += static_cast<double>(n);
  b.sum_attended += static_cast<double>(attended(n));
  if (window_ > 0) b.sum_window_attended += static_cast<double>(std::min(attended(n), window_));
  if (hisparse_ && swap && entries(n) > H_) ++b.slow_path;
}

GpuBatch StepEstimator::batch(int64_t B, const ContextMix& mix, double swap) const {
  GpuBatch b;
  b.requests = B;
  const double Bd = static_cast<double>(B);
  b.sum_n = Bd * mix.mean_seq_len();
  b.sum_attended = Bd * mix.expect([&](int64_t n) { return static_cast<double>(attended(n)); });
  if (window_ > 0)
    b.sum_window_attended = Bd * mix.expect([&](int64_t n) { return static_cast<double>(std::min(attended(n), window_)); });
  if (!hisparse_) return b;
  if (!dynamic_) {
    b.swap = B;
    b.slow_path = std::llround(Bd * mix.expect([&](int64_t n) { return entries(n) > H_ ? 1.0 : 0.0; }));
    return b;
  }
  // Dynamic: `swap` of the B requests in swap mode, the longest first; the others resident.
  const double s = std::clamp(swap, 0.0, Bd);
  const std::vector<double> share = swap_share_by_class(mix, Bd > 0 ? s / Bd : 0);
  double slow = 0;
  for (size_t c = 0; c < mix.classes.size(); ++c)
    if (entries(mix.classes[c].seq_len) > H_) slow += Bd * mix.classes[c].weight * share[c];
  b.swap = std::llround(s);
  b.slow_path = std::llround(slow);
  return b;
}

GpuBatch StepEstimator::verify_batch(const GpuBatch& b) const {
  if (mtp_draft_ == 0) return b;
  const int64_t p = positions();
  const double pd = static_cast<double>(p);
  GpuBatch v = b;
  v.requests = b.requests * p;
  v.sum_n = b.sum_n * pd;  // positions n .. n + d, each scoring ≈ n keys
  v.sum_attended = b.sum_attended * pd;
  v.sum_window_attended = b.sum_window_attended * pd;
  v.slow_path = b.slow_path * p;
  return v;
}

RankCompute StepEstimator::rank_compute(const GpuBatch& batch) const {
  const GpuBatch b = verify_batch(batch);
  RankCompute out;
  if (b.requests <= 0) return out;
  auto allreduce = [&](int64_t requests) {
    return attention_allreduce_ns(layout_.attention_tp, collective_bytes_per_s_, internode_, rank_scenario_.model, params_,
                                  requests);
  };
  // Dynamic residency: with no request in swap mode the batch runs the resident graph, full KV's phases.
  out.resident = resident_graph(b);
  const DecodeCostModel& cost = out.resident ? resident_cost_ : cost_;
  if (params_.overlap == OverlapMode::kNone) {
    out.phases = cost.gpu_phases(b);
    out.phases.attention += allreduce(b.requests);
    out.compute = out.phases.compute();
    out.io_ready = out.phases.before_io();
    out.tail = out.phases.attention;
    out.copy_beside = b.requests;
    out.prefetch_share = shared_share_;
    out.prefetch_window = static_cast<SimTime>(std::llround(static_cast<double>(out.phases.attention) * shared_share_));
    return out;
  }
  // Two micro-batches: every kernel runs twice on half the work; the first micro-batch's first layer must select
  // before any copy can start, and the last micro-batch's last layer attends after its copy.
  GpuBatch h1 = b, h2 = b;
  h1.requests = (b.requests + 1) / 2;
  h2.requests = b.requests - h1.requests;
  const double f1 = static_cast<double>(h1.requests) / static_cast<double>(b.requests);
  h1.sum_n = b.sum_n * f1; h2.sum_n = b.sum_n - h1.sum_n;
  h1.sum_attended = b.sum_attended * f1; h2.sum_attended = b.sum_attended - h1.sum_attended;
  h1.sum_window_attended = b.sum_window_attended * f1;
  h2.sum_window_attended = b.sum_window_attended - h1.sum_window_attended;
  h1.slow_path = (b.slow_path + 1) / 2; h2.slow_path = b.slow_path - h1.slow_path;
  h1.swap = (b.swap + 1) / 2; h2.swap = b.swap - h1.swap;
  GpuPhases p1 = cost.gpu_phases(h1), p2 = cost.gpu_phases(h2);
  p1.attention += allreduce(h1.requests);
  p2.attention += allreduce(h2.requests);
  out.phases.indexer = p1.indexer + p2.indexer;
  out.phases.topk = p1.topk + p2.topk;
  out.phases.swap_in = p1.swap_in + p2.swap_in;
  out.phases.attention = p1.attention + p2.attention;
  out.compute = out.phases.compute();
  out.io_ready = p1.before_io() / cost_.layers();
  out.tail = (h2.requests > 0 ? p2.attention : p1.attention) / cost_.layers();
  out.copy_beside = h1.requests;
  return out;
}

CopyCall StepEstimator::miss_copy(int64_t requests, double misses) const {
  CopyCall c;
  c.bytes = misses * row_bytes_;
  if (!(c.bytes > 0)) return c;
  const auto layers = static_cast<SimTime>(cost_.offload_layers());
  const PcieSpec& pcie = rank_scenario_.hardware.pcie;
  const SwapInCopyCost& k = params_.swap_in_cost;
  if (k.calibrated && !copies_per_page(host_layout_)) {
    // Measured: a fixed cost per copying call, rows at the small-row rate, few requests bound by their own rate.
    // The copy's latency rounds (sim/cost/terms/swap_in_cost.h) are not a rate: what they add over the transfer is part of
    // each call's fixed latency, the rows are the flow. One call's rows are the layer's mean (misses / layers),
    // spread evenly over the requests (the rounds follow the busiest one: an estimate from below).
    const SwapInCall call{requests, misses / cost_.offload_layers(), static_cast<int64_t>(row_bytes_), H_, top_k_};
    c.latency = layers * k.copy_latency_ns(call, pcie.h2d_bulk_bytes_per_s);
    c.max_rate = k.copy_rate(requests);
  } else {
    // One swap-in kernel per layer (decode's per-layer granularity), each paying the per-operation latency; rows
    // move at most at the gather rate. page_first_direct: one copy per missed row per layer instead (the swap-in
    // calibration measured the kernel, so it does not apply to those copies).
    c.latency = decode_transfer(misses).transfers * pcie.latency_ns;
    c.max_rate = pcie.gather_row_bytes_per_s;
  }
  return c;
}

TransferCost StepEstimator::decode_transfer(double misses) const {
  // The misses of one layer are loaded by one call before that layer runs: one call per offloaded layer (every
  // layer; DeepSeek-V4's C4 layers) whenever any row misses.
  const int layers = cost_.offload_layers();
  const auto per_layer = static_cast<int64_t>(std::ceil(misses / layers));
  return decode_per_layer_cost(rank_scenario_.hardware, per_layer, layers, static_cast<int64_t>(row_bytes_),
                               placement_, host_layout_);
}

TransferCost StepEstimator::prefill_offload(int64_t tokens) const {
  // DeepSeek-V4 offloads only the C4 pool: one entry per whole 4 tokens, in its C4 layers. A host page holds
  // page_size tokens (page_size / 4 C4 entries), what page_first_direct copies per call.
  const bool compressed = cost_.compress_ratio() > 1;
  const int64_t page_rows = std::max<int64_t>(1, rank_scenario_.deployment.page_size / cost_.compress_ratio());
  return prefill_offload_cost(rank_scenario_.hardware, compressed ? tokens / cost_.compress_ratio() : tokens,
                              compressed ? cost_.offload_layers() : cost_.kv_layers(),
                              static_cast<int64_t>(row_bytes_), placement_, host_layout_, page_rows);
}

CopyCall StepEstimator::backup(int64_t requests) const {
  // Each request backs up its previous token's row of every KV layer (DeepSeek-V4: a new C4 entry every 4 tokens),
  // on the copy engine beside the compute: one all-layer call (kernel layouts) or one copy per row per layer
  // (page_first_direct).
  CopyCall c;
  const double rows = static_cast<double>(requests) * mtp_accepted_ * cost_.backup_rows_per_token();
  c.bytes = rows * row_bytes_;
  const auto calls = copies_per_page(host_layout_) ? static_cast<SimTime>(std::ceil(rows)) : SimTime{1};
  c.latency = calls * rank_scenario_.hardware.pcie.latency_ns;
  return c;
}

RankEnd StepEstimator::rank_end(const RankCompute& c, SimTime io_start, SimTime io_end, bool copies) const {
  RankEnd out;
  if (params_.overlap == OverlapMode::kNone) {
    // The shared layers' part of the copy runs beside the attention of the layers before each of them.
    const SimTime copy = io_end - io_start;
    out.prefetch_hidden =
        copies ? std::min(static_cast<SimTime>(std::llround(static_cast<double>(copy) * c.prefetch_share)), c.prefetch_window)
               : 0;
    out.done = io_end - out.prefetch_hidden + c.tail;
    out.stall = io_start - c.io_ready;
    out.h2d = copy - out.prefetch_hidden;
    return out;
  }
  // The zero-copy swap-in moves rows with SMs: while it overlaps the other micro-batch's compute, that compute runs
  // on the SMs the copy leaves free (sim/cost/terms/zero_copy_sm_share.h); the delay counts as exposed copy time.
  SimTime stolen = 0;
  if (copies) {
    const double share = zero_copy_sm_share(params_.swap_in_copy_mode, params_.swap_in_cost, c.copy_beside,
                                            rank_scenario_.hardware.sm_count);
    const SimTime overlap = std::max<SimTime>(0, std::min(io_end, c.compute) - io_start);
    stolen = static_cast<SimTime>(std::llround(static_cast<double>(overlap) * share));
  }
  out.done = std::max(c.compute + stolen, copies ? io_end + c.tail : io_end);
  const SimTime exposed = out.done - c.compute;
  out.stall = std::min(io_start - c.io_ready, exposed);
  out.h2d = exposed - out.stall;
  return out;
}

RankEnd StepEstimator::resident_end(const RankCompute& c, SimTime backup_end) const {
  // SGLang waits for the pending backup only before a swap-graph forward (should_wait_for_pending_backup_before_forward
  // in hisparse_dynamic.py); the backup stream still serialises one step's backup behind the previous one.
  RankEnd out;
  out.done = std::max(c.compute, backup_end);
  out.stall = out.done - c.compute;
  return out;
}

SimTime StepEstimator::moe_ns(double instance_requests, double max_gpu_requests) const {
  const double tokens = instance_requests * static_cast<double>(positions());
  const double gpu_tokens = max_gpu_requests * static_cast<double>(positions());
  if (params_.overlap == OverlapMode::kNone) {
    const auto m = cost_.moe_phase(tokens, gpu_tokens);
    return m.compute + m.all_to_all;
  }
  // Each micro-batch reads the experts it touches; one micro-batch's all-to-all hides under the other's compute.
  const auto m = cost_.moe_phase(tokens / 2, gpu_tokens / 2);
  const SimTime fixed = params_.step_overhead_ns(layout_.ranks > 1);
  const SimTime per_batch = m.compute - fixed;
  return 2 * per_batch + fixed + std::max<SimTime>(0, 2 * m.all_to_all - per_batch);
}

StepEstimate StepEstimator::closed_form(const GpuBatch& b, double misses, int64_t instance_requests) const {
  StepEstimate e;
  const int64_t B = b.requests;
  e.batch = B;
  if (B <= 0) return e;
  e.accepted_tokens = mtp_accepted_;
  if (hisparse_) {
    misses *= static_cast<double>(positions());  // each position selects (and misses) as a decode step
    e.misses = misses;
    e.h2d_bytes = misses * row_bytes_;
    if (e.h2d_bytes > 0) {
      const CopyCall c = miss_copy(B, misses);
      e.h2d_transfer_ns = c.latency + transfer_ns(c.bytes, h2d_rate(c));
    }
    // Steady state: every request backs up its previous token.
    const CopyCall k = backup(B);
    e.backup_bytes = k.bytes;
    e.backup_transfer_ns = k.latency + transfer_ns(k.bytes, d2h_rate_);
  }
  const RankCompute rc = rank_compute(b);
  const SimTime start = io_start(rc, e.backup_transfer_ns);
  const RankEnd end = rc.resident ? resident_end(rc, e.backup_transfer_ns)
                                  : rank_end(rc, start, start + e.h2d_transfer_ns, e.h2d_bytes > 0);
  e.cost.indexer = rc.phases.indexer;
  e.cost.topk = rc.phases.topk;
  e.cost.swap_in = rc.phases.swap_in;
  e.cost.attention = rc.phases.attention;
  e.cost.stall = end.stall;
  e.cost.h2d = end.h2d;
  // Tokens of the whole instance in this step.
  const double T = static_cast<double>(instance_requests > 0 ? instance_requests : B * layout_.ranks);
  e.cost.moe = moe_ns(T, max_gpu_tokens(static_cast<double>(B)));
  e.cost.draft = draft_ns(b, T, max_gpu_tokens(static_cast<double>(B)));
  e.cost.prefetch_hidden = end.prefetch_hidden;
  e.step_ns = end.done + e.cost.moe + e.cost.draft;
  e.tpot_ns = static_cast<SimTime>(std::llround(static_cast<double>(e.step_ns) / mtp_accepted_));
  e.tokens_per_s = e.step_ns > 0 ? T * mtp_accepted_ / ns_to_seconds(e.step_ns) : 0;
  return e;
}

}  // namespace hisparse::sim
