// @brief The serving engine's decode step in closed form for a batch of equal requests (see step_time_model.h).
#include "sim/cost/step_time_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/cost/zero_copy_sm_share.h"

namespace hisparse::sim {

RankLayout rank_layout(const Scenario& s) {
  const InstanceSpec& d = s.deployment.decode;
  RankLayout r;
  r.gpus = std::max(1, d.gpus);
  r.ranks = std::clamp(d.dp_attention, 1, r.gpus);
  r.attention_tp = std::max(1, std::max(1, d.tp) / r.ranks);
  const int per_node = std::max(1, std::min(r.gpus, s.hardware.gpus_per_node));
  r.gpus_per_numa = std::max(1, per_node / std::max(1, s.hardware.numa_nodes));
  return r;
}

CollectiveLink collective_link(const Scenario& s) {
  const HardwareSpec& hw = s.hardware;
  const RankLayout layout = rank_layout(s);
  CollectiveLink c;
  const int per_node = std::max(1, hw.gpus_per_node);
  c.nodes = (layout.gpus + per_node - 1) / per_node;
  if (c.nodes > 1) {
    // Instance over several nodes: the collectives leave the node; each GPU's share of the node's NICs bounds them.
    if (hw.nic.count <= 0 || !(hw.nic.bits_per_s > 0))
      throw_error("{}: decode instance of {} GPUs spans {} nodes of {} (hardware gpus_per_node) but hardware nic.count "
                  "and nic.bits_per_s are not set: the inter-node all-to-all needs them",
                  s.source, layout.gpus, c.nodes, per_node);
    const double nic = hw.nic.bits_per_s / 8 * hw.nic.count / per_node;
    c.bytes_per_s = hw.nvlink_bytes_per_s > 0 ? std::min(hw.nvlink_bytes_per_s, nic) : nic;
    c.label = fmt::format("inter-node nic ({} nodes, {:.1f} GB/s per GPU)", c.nodes, c.bytes_per_s / 1e9);
  } else if (hw.nvlink_bytes_per_s > 0) {
    c.bytes_per_s = hw.nvlink_bytes_per_s;
    c.label = fmt::format("nvlink ({:.1f} GB/s per GPU)", c.bytes_per_s / 1e9);
  } else {
    // No NVLink: peer-to-peer over PCIe, bounded by the GPU's own link (the switch's other ports are not modelled).
    if (!(hw.pcie.h2d_bulk_bytes_per_s > 0))
      throw_error("{}: hardware has no nvlink_bytes_per_s and no pcie.h2d_bulk_bytes_per_s: no link for the all-to-all",
                  s.source);
    c.bytes_per_s = hw.pcie.h2d_bulk_bytes_per_s;
    c.label = fmt::format("pcie peer, no nvlink ({:.1f} GB/s per GPU)", c.bytes_per_s / 1e9);
  }
  return c;
}

SimTime attention_allreduce_ns(int gpus_per_rank, double collective_bytes_per_s, const ModelSpec& model,
                               const CostParams& p, int64_t batch) {
  if (gpus_per_rank <= 1 || batch <= 0) return 0;
  const double bytes = static_cast<double>(batch) * model.hidden_size * 2.0;
  const double moved = 2.0 * (gpus_per_rank - 1) / gpus_per_rank * bytes;
  const SimTime per_layer = p.all_to_all_latency_ns + seconds_to_ns_ceil(moved / (collective_bytes_per_s * p.efficiency.nvlink));
  return per_layer * model.layers;
}

namespace {

Scenario make_rank_scenario(const Scenario& s) {
  Scenario out = s;
  // Under attention TP each GPU computes heads / attention_tp query heads but still reads every latent row, so
  // only the FLOP side of attention (and its sharded projections) shrinks.
  const RankLayout r = rank_layout(s);
  out.model.attention_heads = std::max(1, s.model.attention_heads / r.attention_tp);
  // The all-to-all runs on the instance's collective link (DecodeCostModel prices it at nvlink_bytes_per_s).
  out.hardware.nvlink_bytes_per_s = collective_link(s).bytes_per_s;
  return out;
}

}  // namespace

StepTimeModel::StepTimeModel(const Scenario& scenario, const CostParams& params, bool hisparse,
                             MissFraction miss_fraction)
    : rank_scenario_(make_rank_scenario(scenario)),
      params_(params),
      hisparse_(hisparse),
      miss_fraction_(std::move(miss_fraction)),
      cost_(rank_scenario_, params_, hisparse),
      layout_(rank_layout(scenario)) {
  const HardwareSpec& hw = scenario.hardware;
  if (hisparse && !scenario.model.has_sparse_indexer())
    throw_error("{}: HiSparse step of model {}: not applicable, the model has no sparse indexer", scenario.source,
                scenario.model.name);
  collective_bytes_per_s_ = rank_scenario_.hardware.nvlink_bytes_per_s;
  row_bytes_ = cost_.kv_row_bytes();
  top_k_ = hisparse ? scenario.deployment.hisparse.top_k : scenario.model.top_k;
  window_ = scenario.model.is_gqa() ? scenario.model.sliding_window : 0;
  H_ = scenario.deployment.hisparse.device_buffer_size;
  if (hisparse) {
    if (!(hw.pcie.h2d_bulk_bytes_per_s > 0) || !(hw.pcie.d2h_bulk_bytes_per_s > 0))
      throw_error("{}: hardware pcie h2d/d2h_bulk_bytes_per_s must be > 0 to plan HiSparse", scenario.source);
    // The engine's miss flow: capped at the gathered-row rate, on the GPU's H2D link and its NUMA node's DRAM,
    // which every GPU of the node loads at once in a lockstep step (max-min fair share).
    const double dram = hw.host_dram_bytes_per_s_per_numa > 0 ? hw.host_dram_bytes_per_s_per_numa / layout_.gpus_per_numa
                                                              : hw.pcie.h2d_bulk_bytes_per_s;
    const double gather = hw.pcie.gather_row_bytes_per_s > 0 ? hw.pcie.gather_row_bytes_per_s : hw.pcie.h2d_bulk_bytes_per_s;
    h2d_link_ = std::min(hw.pcie.h2d_bulk_bytes_per_s, dram);
    h2d_rate_ = std::min(gather, h2d_link_);
    d2h_rate_ = std::min(hw.pcie.d2h_bulk_bytes_per_s, dram);
  }
}

double StepTimeModel::h2d_rate(int64_t batch) const {
  const SwapInCopyCost& c = params_.swap_in_cost;
  if (!c.calibrated) return h2d_rate_;
  return std::min(c.copy_rate(batch), h2d_link_);
}

SimTime StepTimeModel::h2d_fixed_ns(int64_t batch) const {
  const SwapInCopyCost& c = params_.swap_in_cost;
  const SimTime per_call = c.calibrated ? c.copy_latency_ns(batch)
                                        : rank_scenario_.hardware.pcie.latency_ns;
  return static_cast<SimTime>(cost_.layers()) * per_call;
}

double StepTimeModel::misses_per_request(int64_t n) const {
  if (!hisparse_ || n <= H_ || !miss_fraction_) return 0;
  const double f = std::clamp(miss_fraction_(n), 0.0, 1.0);
  // The newest token sits in its reserved slot, so at most min(n, K) − 1 selections per layer can miss.
  return static_cast<double>(std::min<int64_t>(n, top_k_) - 1) * cost_.layers() * f;
}

StepEstimate StepTimeModel::step(int64_t B, const ContextMix& mix) const {
  StepEstimate e;
  e.batch = B;
  e.seq_len = std::llround(mix.mean_seq_len());
  if (B <= 0) return e;
  const Scenario& s = rank_scenario_;
  const SimTime latency = s.hardware.pcie.latency_ns;
  const double Bd = static_cast<double>(B);
  GpuBatch b;
  b.requests = B;
  b.sum_n = Bd * mix.mean_seq_len();
  // Rows attention reads per layer: the top-k of a sparse model, every token of a dense one (top_k 0).
  auto attended = [&](int64_t n) { return top_k_ > 0 ? std::min<int64_t>(n, top_k_) : n; };
  b.sum_attended = Bd * mix.expect([&](int64_t n) { return static_cast<double>(attended(n)); });
  if (window_ > 0)
    b.sum_window_attended = Bd * mix.expect([&](int64_t n) { return static_cast<double>(std::min(attended(n), window_)); });
  b.slow_path = hisparse_ ? std::llround(Bd * mix.expect([&](int64_t n) { return n > H_ ? 1.0 : 0.0; })) : 0;

  if (hisparse_) {
    e.misses = Bd * mix.expect([&](int64_t n) { return misses_per_request(n); });
    e.h2d_bytes = e.misses * row_bytes_;
    // One swap-in kernel per layer pays the per-operation latency (as the engine charges it).
    if (e.h2d_bytes > 0) {
      SimTime fixed = h2d_fixed_ns(B);
      if (const SwapInCopyCost& c = params_.swap_in_cost; c.calibrated) {
        // The small-batch fused copy's latency rounds (sim/cost/swap_in_cost.h), charged as the engine charges them: one
        // call per layer moving the layer's mean rows, the rounds' excess over the transfer as its fixed part.
        const SwapInCall call{B, e.misses / cost_.layers(), static_cast<int64_t>(row_bytes_), H_, top_k_};
        fixed = static_cast<SimTime>(cost_.layers()) * c.copy_latency_ns(call, s.hardware.pcie.h2d_bulk_bytes_per_s);
      }
      e.h2d_transfer_ns = fixed + transfer_ns(e.h2d_bytes, h2d_rate(B));
    }
    // Steady state: every request backs up its previous token's row of every KV layer.
    e.backup_bytes = static_cast<double>(B) * cost_.kv_layers() * row_bytes_;
    e.backup_transfer_ns = latency + transfer_ns(e.backup_bytes, d2h_rate_);
  }

  const double T = static_cast<double>(B) * layout_.ranks;  // tokens of the whole instance in this step
  const double per_gpu_tokens = T / layout_.gpus;
  SimTime gpu_done = 0, moe = 0;
  if (params_.overlap == OverlapMode::kNone) {
    GpuPhases ph = cost_.gpu_phases(b);
    ph.attention += allreduce(B);
    const SimTime a_end = ph.before_io();
    const SimTime io_start = std::max(a_end, e.backup_transfer_ns);
    e.cost.indexer = ph.indexer;
    e.cost.topk = ph.topk;
    e.cost.swap_in = ph.swap_in;
    e.cost.attention = ph.attention;
    e.cost.stall = io_start - a_end;
    e.cost.h2d = e.h2d_transfer_ns;
    gpu_done = io_start + e.h2d_transfer_ns + ph.attention;
    const auto m = cost_.moe_phase(T, per_gpu_tokens);
    moe = m.compute + m.all_to_all;
  } else {
    // Two micro-batches, split as the engine splits them.
    GpuBatch h1 = b, h2 = b;
    h1.requests = (B + 1) / 2;
    h2.requests = B - h1.requests;
    const double f1 = static_cast<double>(h1.requests) / static_cast<double>(B);
    h1.sum_n = b.sum_n * f1; h2.sum_n = b.sum_n - h1.sum_n;
    h1.sum_attended = b.sum_attended * f1; h2.sum_attended = b.sum_attended - h1.sum_attended;
    h1.sum_window_attended = b.sum_window_attended * f1;
    h2.sum_window_attended = b.sum_window_attended - h1.sum_window_attended;
    h1.slow_path = (b.slow_path + 1) / 2; h2.slow_path = b.slow_path - h1.slow_path;
    GpuPhases p1 = cost_.gpu_phases(h1), p2 = cost_.gpu_phases(h2);
    p1.attention += allreduce(h1.requests);
    p2.attention += allreduce(h2.requests);
    e.cost.indexer = p1.indexer + p2.indexer;
    e.cost.topk = p1.topk + p2.topk;
    e.cost.swap_in = p1.swap_in + p2.swap_in;
    e.cost.attention = p1.attention + p2.attention;
    const SimTime compute = p1.compute() + p2.compute();
    const SimTime io_fill = p1.before_io() / cost_.layers();
    const SimTime tail = (h2.requests > 0 ? p2.attention : p1.attention) / cost_.layers();
    const SimTime io_start = std::max(io_fill, e.backup_transfer_ns);
    const SimTime io_end = io_start + e.h2d_transfer_ns;
    // The zero-copy swap-in moves rows with SMs: while it overlaps the other micro-batch's compute, that compute
    // runs on the SMs the copy leaves free.
    const double share = zero_copy_sm_share(params_.swap_in_copy_mode, params_.swap_in_cost, h1.requests,
                                            s.hardware.sm_count);
    const SimTime overlap = e.h2d_bytes > 0 ? std::max<SimTime>(0, std::min(io_end, compute) - io_start) : 0;
    const auto stolen = static_cast<SimTime>(std::llround(static_cast<double>(overlap) * share));
    gpu_done = std::max(compute + stolen, e.h2d_bytes > 0 ? io_end + tail : io_end);
    const SimTime exposed = gpu_done - compute;
    e.cost.stall = std::min(io_start - io_fill, exposed);
    e.cost.h2d = exposed - e.cost.stall;
    const auto m = cost_.moe_phase(T / 2, per_gpu_tokens / 2);
    const SimTime per_batch = m.compute - params_.step_overhead_ns;
    moe = 2 * per_batch + params_.step_overhead_ns + std::max<SimTime>(0, 2 * m.all_to_all - per_batch);
  }
  e.cost.moe = moe;
  e.step_ns = gpu_done + moe;
  e.tokens_per_s = e.step_ns > 0 ? T / ns_to_seconds(e.step_ns) : 0;
  return e;
}

int64_t StepTimeModel::max_batch_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const {
  // Every term of the step is non-decreasing in B, so the fitting batches form a prefix.
  return largest_fitting(cap, [&](int64_t B) { return step(B, mix).step_ns <= slo_ns; });
}

int64_t StepTimeModel::max_batch_io_within(const ContextMix& mix, SimTime slo_ns, int64_t cap) const {
  return largest_fitting(cap, [&](int64_t B) {
    const StepEstimate e = step(B, mix);
    return e.h2d_transfer_ns <= slo_ns && e.backup_transfer_ns <= slo_ns;
  });
}

}  // namespace hisparse::sim
