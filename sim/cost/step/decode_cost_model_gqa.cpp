// @brief The decode step of a grouped-query-attention model (Llama, Qwen3, gpt-oss; ModelSpec::is_gqa): no indexer,
// no top-k; attention reads every cached K and V row of a full-attention layer and at most the window of a sliding
// one; a dense SwiGLU MLP or routed experts. Every term is a roofline of the op's FLOPs and bytes at the cost-model
// file's efficiencies (modelled: no per-op calibration of these models exists), plus one CUDA-graph gap per kernel.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sim/cost/step/decode_cost_model.h"

namespace hisparse::sim {

SimTime DecodeCostModel::gemm_ns(double out, double in, double tokens, double bytes_per_param) const {
  // Weights read once, activations in (bf16) and out (bf16); bf16 weights run on the bf16 peak, narrower on fp8's.
  const double flops = 2.0 * out * in * tokens;
  const double bytes = out * in * bytes_per_param + tokens * in * 2 + tokens * out * 2;
  const double peak = bytes_per_param >= 2 ? sc_.hardware.bf16_flops : fp8_peak();
  return kernel(flops, bytes, peak, p_.efficiency.dense);
}

GpuPhases DecodeCostModel::gqa_phases(const GpuBatch& b) const {
  GpuPhases out;
  const ModelSpec& m = sc_.model;
  const auto& e = p_.efficiency;
  const double B = static_cast<double>(b.requests), h = m.hidden_size, hd = m.head_dim;
  const double hq = m.attention_heads;  // query heads on this GPU (the rank scenario divides them by attention TP)
  const double hk = kv_heads_;
  const double bpp = m.dense_weight_bytes_per_param > 0 ? m.dense_weight_bytes_per_param : 2.0;
  // Per layer: input norm, fused QKV projection, RoPE on q and k, O projection.
  const SimTime norm = kernel(0, 4.0 * B * h, sc_.hardware.bf16_flops, e.dense);
  const SimTime qkv = gemm_ns((hq + 2 * hk) * hd, h, B, bpp);
  const SimTime rope = kernel(0, 4.0 * B * (hq + hk) * hd, sc_.hardware.bf16_flops, e.dense);
  const SimTime o = gemm_ns(h, hq * hd, B, bpp);
  const SimTime per_layer = norm + qkv + rope + o;
  // Decode attention is memory-bound: each layer reads the K + V rows it attends (kv_row_bytes: every KV head this
  // GPU holds) and the queries / outputs; QK^T and PV are 2 FLOPs per multiply-add each, per query head.
  auto attention = [&](double rows, int layers) -> SimTime {
    if (layers <= 0) return 0;
    const double flops = 4.0 * hq * hd * rows;
    const double bytes = rows * kv_row_bytes_ + B * hq * hd * 2.0 * 2.0;
    return kernel(flops, bytes, sc_.hardware.bf16_flops, e.attention) * layers;
  };
  // A linear-attention (Mamba-style) layer reads each request's state slot and writes it back once per step, the
  // budget's slot (memory-bound: 2 × its bytes); the SSM state's rank-1 update and the query's read-out are one
  // multiply-add each per state value (4 FLOPs). Its projections are priced as a full layer's above (modelled).
  const double state_flops = 4.0 * B * static_cast<double>(mamba_state_.ssm_elements);
  const double state_bytes = 2.0 * B * static_cast<double>(mamba_state_.bytes());
  const SimTime linear =
      linear_layers_ > 0 ? kernel(state_flops, state_bytes, sc_.hardware.bf16_flops, e.attention) * linear_layers_ : 0;
  out.attention = per_layer * m.layers + attention(b.sum_attended, full_attn_layers_) +
                  attention(b.sum_window_attended, sliding_attn_layers_) + linear;
  return out;
}

DecodeCostModel::MoeTime DecodeCostModel::gqa_mlp_phase(double T, double max_gpu_tokens) const {
  MoeTime out;
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const auto& e = p_.efficiency;
  const InstanceSpec& inst = sc_.deployment.decode;
  const int gpus = std::max(1, inst.gpus);
  const int ranks = std::clamp(inst.dp_attention, 1, gpus);
  const int atp = std::max(1, std::max(1, inst.tp) / ranks);
  // The rank's tokens go through its MLP, whose weights are split over the rank's GPUs (tensor parallel).
  const double rank_tokens = max_gpu_tokens * atp;
  const double h = m.hidden_size;
  const double bpp = m.dense_weight_bytes_per_param > 0 ? m.dense_weight_bytes_per_param : 2.0;
  const SimTime norm = kernel(0, 4.0 * rank_tokens * h, hw.bf16_flops, e.dense);
  if (m.dense_layers > 0) {
    const double I = static_cast<double>(m.dense_intermediate_size) / atp;
    const SimTime mlp = norm + gemm_ns(2 * I, h, rank_tokens, bpp) +
                        kernel(0, 6.0 * rank_tokens * I, hw.bf16_flops, e.dense) + gemm_ns(h, I, rank_tokens, bpp);
    out.compute += mlp * m.dense_layers;
  }
  const int moe_layers = std::max(0, m.layers - m.dense_layers);
  if (moe_layers > 0 && m.routed_experts > 0) {
    // Experts spread over expert parallelism, or split by tensor parallelism without it: `shard` GPUs share them.
    const double shard = std::max(std::max(1, inst.ep), atp);
    const double I = m.moe_intermediate_size;
    const double epp = 3.0 * h * I;  // gate, up, down
    const double ebpp = m.expert_weight_bytes_per_param > 0 ? m.expert_weight_bytes_per_param : p_.weight_bytes_per_param;
    const double picks = T * m.experts_per_token;
    const double p_touched = 1.0 - std::pow(1.0 - 1.0 / m.routed_experts, picks);
    const double read_here = m.routed_experts / shard * p_touched * epp * ebpp;
    const double routed_tokens = picks / shard;
    const SimTime router = gemm_ns(m.routed_experts, h, rank_tokens, bpp);
    const SimTime experts = kernel(2.0 * epp * routed_tokens, read_here + routed_tokens * (h * 3.0 + I * 5.0),
                                   hw.bf16_flops, e.moe);
    out.compute += (norm + router + experts) * moe_layers;
    if (inst.ep > 1) out.all_to_all = expert_all_to_all_ns(max_gpu_tokens) * moe_layers;
  }
  if (atp > 1) {
    // Tensor-parallel MLP: a ring all-reduce of its bf16 output per layer (the attention one is charged by the plan).
    if (!(allreduce_site_.link_bytes_per_s > 0))
      throw_error("{}: no nvlink_bytes_per_s or PCIe rate for the tensor-parallel all-reduce", sc_.source);
    out.all_to_all += hidden_allreduce_ns(rank_tokens, atp) * m.layers;
  }
  // LM head (vocabulary split over the TP group) and sampling, then the step's fixed overhead.
  out.compute += kernel(2.0 * lm_head_params_ / std::max(1, inst.tp) * T, lm_head_params_ / std::max(1, inst.tp) * bpp,
                        hw.bf16_flops, e.dense) +
                 p_.graph_kernel_gap_ns;
  out.compute += p_.step_overhead_ns(inst.dp_attention > 1);
  return out;
}

SimTime DecodeCostModel::gqa_prefill_time(int64_t tokens) const {
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const double gpus = std::max(1, sc_.deployment.prefill.gpus);
  const double n = static_cast<double>(tokens);
  // Causal attention pairs: n(n+1)/2 on a full layer; a sliding layer's token attends at most `window` of them.
  const double W = m.sliding_window > 0 ? m.sliding_window : n;
  const double sliding_pairs = n <= W ? n * (n + 1) / 2 : W * (W + 1) / 2 + (n - W) * W;
  const double pairs = n * (n + 1) / 2 * m.full_attention_layer_count() + sliding_pairs * m.sliding_layer_count();
  const double flops = 2.0 * m.active_params * n + 4.0 * m.attention_heads * m.head_dim * pairs;
  const double chunks = std::ceil(n / p_.prefill_chunk_tokens);
  const double peak = m.dense_weight_bytes_per_param >= 2 ? hw.bf16_flops : fp8_peak();
  const double t = std::max(flops / (gpus * peak * p_.efficiency.prefill.compute),
                            chunks * m.weight_bytes / gpus / (hw.hbm_bytes_per_s * p_.efficiency.prefill.memory));
  return seconds_to_ns_ceil(t);
}

}  // namespace hisparse::sim
