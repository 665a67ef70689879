// @brief Roofline arithmetic of decode and prefill (FLOPs and bytes of each operation of DeepSeek-V3.2-style MLA+DSA+MoE).
#include "sim/decode_cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/decode_layer_ops.h"
#include "core/error.h"
#include "sim/step_calibration.h"

namespace hisparse::sim {

DecodeCostModel::DecodeCostModel(const Scenario& scenario, const CostParams& params, bool hisparse)
    : sc_(scenario), p_(params), hisparse_(hisparse) {
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  if (m.layers <= 0) throw_error("{}: model.layers must be > 0 for the cost model", sc_.source);
  if (!(hw.hbm_bytes_per_s > 0) || !(hw.bf16_flops > 0))
    throw_error("{}: hardware hbm_bytes_per_s and bf16_flops must be > 0 for the cost model", sc_.source);
  layers_ = m.layers;
  kv_layers_ = m.kv_layers();
  selecting_layers_ = (m.layers + std::max(1, m.topk_layer_group) - 1) / std::max(1, m.topk_layer_group);
  kv_row_bytes_ = static_cast<double>(sc_.deployment.kv_dtype == KvDtype::kFp8 ? m.latent_row_bytes_fp8 : m.latent_row_bytes);
  indexer_key_bytes_ = static_cast<double>(m.indexer_key_bytes);
  const double h = m.hidden_size, heads = m.attention_heads;
  // MLA with LoRA'd queries: q_a, q_b, kv_a (latent + rope), kv_b (absorbed into q and o at decode), o_proj.
  attn_params_ = h * m.q_lora_rank + m.q_lora_rank * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) +
                 h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim) +
                 heads * m.v_head_dim * h;
  // Lightning indexer: query up-projection from the q LoRA, one key head, per-head weights.
  indexer_params_ = static_cast<double>(m.q_lora_rank) * m.indexer_heads * m.indexer_head_dim +
                    h * m.indexer_head_dim + h * m.indexer_heads;
  expert_params_ = 3.0 * h * m.moe_intermediate_size;
  dense_mlp_params_ = 3.0 * h * m.dense_intermediate_size;
  lm_head_params_ = static_cast<double>(m.vocab_size) * h;
  if (p_.step && p_.step->model != m.name)
    throw_error("{}: the per-op calibration is for model {}, the scenario's model is {} (use --step-calibration none "
                "or a calibration of this model)", sc_.source, p_.step->model, m.name);
}

std::vector<DecodeOpWork> DecodeCostModel::deployed_ops(double batch, double context) const {
  const int B = std::max(1, static_cast<int>(std::ceil(batch)));
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(std::llround(context)));
  return decode_layer_ops(sc_.model, B, n, std::max(1, sc_.deployment.decode.ep));  // fp8 projections, as deployed
}

SimTime DecodeCostModel::calibrated_ns(std::initializer_list<const char*> ops,
                                       const std::vector<DecodeOpWork>& work) const {
  SimTime t = 0;
  for (const char* op : ops) {
    const std::string name = op;
    const DecodeOpWork* w = nullptr;
    for (const DecodeOpWork& x : work)  // top-k's name says whether every position is selected
      if (x.op == name || (name == "topk" && x.op == "topk_all")) w = &x;
    if (!w) throw_error("per-op calibration: {} is not an op of core/decode_layer_ops.h", name);
    const OpTimeModel* m = p_.step->find(w->op, w->dtype);
    if (!m) throw_error("per-op calibration of {}: no model for {} ({})", p_.step->device, w->op, w->dtype);
    t += seconds_to_ns_ceil(m->predict(*w) * 1e-6 * w->per_layer);
  }
  return t;
}

SimTime DecodeCostModel::roofline(double flops, double bytes, double peak_flops, double efficiency, int launches) const {
  const double t = std::max(flops / (peak_flops * efficiency), bytes / (sc_.hardware.hbm_bytes_per_s * efficiency));
  return seconds_to_ns_ceil(t) + static_cast<SimTime>(launches) * sc_.hardware.kernel_launch_ns;
}

GpuPhases DecodeCostModel::gpu_phases(const GpuBatch& b) const {
  GpuPhases out;
  if (b.requests == 0) return out;
  const ModelSpec& m = sc_.model;
  const double B = static_cast<double>(b.requests);
  const double K = hisparse_ ? sc_.deployment.hisparse.top_k : m.top_k;
  const double H = sc_.deployment.hisparse.device_buffer_size;
  const double fp8 = sc_.hardware.fp8_flops > 0 ? sc_.hardware.fp8_flops : sc_.hardware.bf16_flops;
  const double bpp = p_.weight_bytes_per_param;
  const auto& e = p_.efficiency;
  const double attn_flops = b.sum_attended * m.attention_heads * (m.cache_row_width() + m.kv_lora_rank) * 2.0;
  const double idx_flops = 2.0 * m.indexer_heads * m.indexer_head_dim * b.sum_n;
  const double idx_bytes = b.sum_n * indexer_key_bytes_ + b.sum_n * 4.0;
  if (p_.step) {
    // Measured per-op models where the measured implementation is the deployed one's kind: the cuBLASLt GEMMs of
    // the projections (the indexer's, MLA's and the absorbed w_kv_b) and top-k, at this batch and its mean context
    // (top-k's work is linear in the summed context). The indexer's scoring and the sparse attention kernel stay
    // roofline: the project's kernels (a CUDA-core indexer, a one-wave attention) are not DeepGEMM's or
    // FlashMLA's. A graph-timed op already holds its gap to the next kernel; a roofline one pays the measured gap.
    const std::vector<DecodeOpWork> work = deployed_ops(B, b.sum_n / B);
    const SimTime gap = seconds_to_ns_ceil(p_.step->graph_gap_us * 1e-6);
    out.indexer = (calibrated_ns({"indexer_q", "indexer_k", "indexer_w"}, work) +
                   roofline(idx_flops, idx_bytes, fp8, e.indexer, 0) + gap) * selecting_layers_;
    out.topk = calibrated_ns({"topk"}, work) * selecting_layers_;
    out.attention = (calibrated_ns({"q_a", "q_b", "kv_a", "w_kv_b_q", "w_kv_b_o", "o_proj"}, work) +
                     roofline(attn_flops, b.sum_attended * kv_row_bytes_, sc_.hardware.bf16_flops, e.attention, 0) + gap) *
                    layers_;
  } else {
    // Indexer: every token's key is read and scored by every indexer head (fp8), once per selecting layer.
    out.indexer = roofline(idx_flops + 2.0 * indexer_params_ * B, idx_bytes + indexer_params_ * bpp, fp8, e.indexer, 3) *
                  selecting_layers_;
    // Top-k: reads the fp32 scores, writes K indices per request.
    out.topk = roofline(0, b.sum_n * 4.0 + B * K * 4.0, fp8, e.topk, 1) * selecting_layers_;
    const int rest = std::max(1, p_.kernels_per_layer - 5);
    out.attention = roofline(attn_flops + 2.0 * attn_params_ * B, b.sum_attended * kv_row_bytes_ + attn_params_ * bpp,
                             sc_.hardware.bf16_flops, e.attention, rest) * layers_;
  }
  if (hisparse_ && p_.swap_in_cost.calibrated) {
    // Measured on this device (one call per layer); the slow path walks the H slots of the LRU.
    out.swap_in = p_.swap_in_cost.plan_ns(b.requests, b.slow_path > 0 ? static_cast<int64_t>(H) : 0) * layers_;
  } else if (hisparse_) {
    // Hit detection: read the K selections and write slot ids; the slow path also walks slot_token and lru.
    const double bytes = B * K * 8.0 + static_cast<double>(b.slow_path) * H * 8.0;
    out.swap_in = roofline(0, bytes, fp8, e.swap_in, 1) * layers_;
  }
  return out;
}

DecodeCostModel::MoeTime DecodeCostModel::moe_phase(double T, double max_gpu_tokens) const {
  MoeTime out;
  if (!(T > 0)) return out;
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const double ep = std::max(1, sc_.deployment.decode.ep);
  const double tp = std::max(1, sc_.deployment.decode.tp);
  const double fp8 = hw.fp8_flops > 0 ? hw.fp8_flops : hw.bf16_flops;
  const double bpp = p_.weight_bytes_per_param;
  const auto& e = p_.efficiency;
  const int moe_layers = std::max(0, layers_ - m.dense_layers);
  if (p_.step) {
    // Measured per-op models at the slowest GPU's batch: router, shared expert, dense MLP. The routed experts stay
    // roofline: the benchmark runs them as one cuBLASLt GEMM per expert (2.3 TB/s of expert weights on the H200),
    // not as DeepGEMM's single grouped kernel that SGLang runs.
    const std::vector<DecodeOpWork> work = deployed_ops(max_gpu_tokens, 1);
    out.compute += calibrated_ns({"router", "shared_gate_up", "shared_down"}, work) * moe_layers;
    out.compute += calibrated_ns({"dense_gate_up", "dense_down"}, work) * m.dense_layers;
  }
  if (moe_layers > 0 && m.routed_experts > 0) {
    // Expected distinct experts one GPU must read: each routed pick lands on a uniform expert.
    const double picks = T * m.experts_per_token;
    const double p_touched = 1.0 - std::pow(1.0 - 1.0 / m.routed_experts, picks);
    const double experts_here = m.routed_experts / ep * p_touched + m.shared_experts;
    const double tokens_here = picks / ep + max_gpu_tokens * m.shared_experts;
    if (!p_.step) {
      out.compute += roofline(2.0 * expert_params_ * tokens_here, experts_here * expert_params_ * bpp, fp8, e.moe, 3) * moe_layers;
    } else {
      // Routed experts only (the shared expert is calibrated above), launched inside the step's graph.
      const double routed_here = m.routed_experts / ep * p_touched;
      const double routed_tokens = picks / ep;
      out.compute += (roofline(2.0 * expert_params_ * routed_tokens, routed_here * expert_params_ * bpp, fp8, e.moe, 0) +
                      seconds_to_ns_ceil(p_.step->graph_gap_us * 1e-6)) * moe_layers;
    }
    // Dispatch (fp8 hidden) and combine (bf16 hidden) of the slowest GPU's tokens, the (ep-1)/ep that leave it.
    const double a2a_bytes = max_gpu_tokens * m.experts_per_token * m.hidden_size * 3.0 * (ep - 1) / ep;
    const double nv = hw.nvlink_bytes_per_s > 0 ? hw.nvlink_bytes_per_s : hw.hbm_bytes_per_s;
    out.all_to_all = (2 * p_.all_to_all_latency_ns + transfer_ns(a2a_bytes, nv * e.nvlink)) * moe_layers;
  }
  if (m.dense_layers > 0) {
    // Dense MLP layers are tensor-parallel over the instance's tokens; one all-reduce latency each.
    if (!p_.step) out.compute += roofline(2.0 * dense_mlp_params_ / tp * T, dense_mlp_params_ / tp * bpp, fp8, e.dense, 3) * m.dense_layers;
    out.all_to_all += p_.all_to_all_latency_ns * m.dense_layers;
  }
  out.compute += roofline(2.0 * lm_head_params_ / tp * T, lm_head_params_ / tp * 2.0, hw.bf16_flops, e.dense, 2);
  out.compute += p_.step_overhead_ns;
  return out;
}

SimTime DecodeCostModel::prefill_time(int64_t tokens) const {
  if (tokens <= 0) return 0;
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const double gpus = std::max(1, sc_.deployment.prefill.gpus);
  const double n = static_cast<double>(tokens);
  const double K = m.top_k;
  const double fp8 = hw.fp8_flops > 0 ? hw.fp8_flops : hw.bf16_flops;
  // Dense work of every active parameter, plus the indexer's causal n²/2 scoring and sparse attention
  // over min(position, K) rows per token.
  const double attended = n <= K ? n * (n + 1) / 2 : K * (K + 1) / 2 + (n - K) * K;
  const double flops = 2.0 * m.active_params * n +
                       2.0 * m.indexer_heads * m.indexer_head_dim * (n * (n + 1) / 2) * selecting_layers_ +
                       2.0 * m.attention_heads * (m.cache_row_width() + m.kv_lora_rank) * attended * layers_;
  const double chunks = std::ceil(n / p_.prefill_chunk_tokens);
  const double t = std::max(flops / (gpus * fp8 * p_.efficiency.prefill),
                            chunks * m.weight_bytes / gpus / (hw.hbm_bytes_per_s * p_.efficiency.dense));
  return seconds_to_ns_ceil(t) +
         static_cast<SimTime>(chunks) * layers_ * p_.kernels_per_layer * hw.kernel_launch_ns;
}

}  // namespace hisparse::sim
