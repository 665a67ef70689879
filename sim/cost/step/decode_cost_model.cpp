// @brief Time of each decode-step operation of DeepSeek-V3.2-style MLA+DSA+MoE: measured per-op models where the
// step calibration has them, else the roofline of the op's work (core/decode_layer_ops.h) at the cost-model file's
// efficiencies; prefill in closed form.
#include "sim/cost/step/decode_cost_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/decode_layer_ops.h"
#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/cost/terms/op_time_model.h"

namespace hisparse::sim {
namespace {

/// Ops whose measured implementation is of the kind SGLang runs: the cuBLASLt projection GEMMs (family gemm),
/// top-k, and the norms/RoPE/SiLU. The indexer's scoring, the sparse attention and the routed experts are not (the
/// project's CUDA-core indexer and one-wave attention kernel, a per-expert GEMM loop, against DeepGEMM's fp8 MQA
/// logits, FlashMLA's sparse decode and DeepGEMM's masked grouped GEMM): they stay roofline at the efficiencies
/// the cost-model file takes from those kernels' published figures.
bool is_calibrated(const DecodeOpWork& w) {
  return w.family == "gemm" || w.family == "topk" || w.family == "elementwise";
}

const RooflineEfficiency& efficiency_for(const Efficiency& e, const std::string& family) {
  if (family == "grouped_gemm") return e.moe;
  if (family == "indexer") return e.indexer;
  if (family == "topk") return e.topk;
  if (family == "attention") return e.attention;
  return e.dense;  // gemm, elementwise
}

}  // namespace

DecodeCostModel::DecodeCostModel(const Scenario& scenario, const CostParams& params, bool hisparse)
    : DecodeCostModel(scenario, params, hisparse, hisparse) {}

DecodeCostModel::DecodeCostModel(const Scenario& scenario, const CostParams& params, bool hisparse,
                                 bool hisparse_server)
    : sc_(scenario), p_(params), pricing_(family_of(scenario).layer_pricing()), hisparse_(hisparse) {
  const ModelSpec& m = sc_.model;
  const ModelFamily& family = family_of(sc_);
  const HardwareSpec& hw = sc_.hardware;
  if (m.layers <= 0) throw_error("{}: model.layers must be > 0 for the cost model", sc_.source);
  if (!(hw.hbm_bytes_per_s > 0) || !(hw.bf16_flops > 0))
    throw_error("{}: hardware hbm_bytes_per_s and bf16_flops must be > 0 for the cost model", sc_.source);
  layers_ = m.layers;
  kv_layers_ = m.kv_layers();
  selecting_layers_ = m.topk_anchor_layers();  // IndexShare: only the anchors score and select (GLM-5.2: 21 of 78)
  if (pricing_ == LayerPricing::kCompressed) {  // DeepSeek-V4: the C4 layers score and select
    c4_layers_ = selecting_layers_ = m.compressed_layer_count(4);
    c128_layers_ = m.compressed_layer_count(128);
  }
  kv_row_bytes_ = static_cast<double>(family.kv_row_bytes(sc_));
  if (pricing_ == LayerPricing::kGqaKv) {
    const int atp = std::max(1, sc_.deployment.decode.tp / std::max(1, sc_.deployment.decode.dp_attention));
    kv_heads_ = kv_heads_per_rank(m, atp);
    full_attn_layers_ = m.full_attention_layer_count();
    sliding_attn_layers_ = m.sliding_layer_count();
    linear_layers_ = m.linear_layer_count();
    if (linear_layers_ > 0) mamba_state_ = mamba_layer_state(m, atp);
  }
  indexer_key_bytes_ = static_cast<double>(m.indexer_key_bytes);
  expert_params_ = 3.0 * m.hidden_size * m.moe_intermediate_size;
  lm_head_params_ = static_cast<double>(m.vocab_size) * m.hidden_size;
  a2a_site_ = collective_site(sc_, p_, /*all_to_all=*/true);
  allreduce_site_ = collective_site(sc_, p_, /*all_to_all=*/false);
  deepep_ = sc_.deployment.decode.ep > 1 && sc_.deployment.decode.dp_attention > 1;
  // The op tables time SGLang's kernels of MLA models (set only for SGLang deployments: sim/calibration/
  // op_tables_choice.h); a GQA model's layer is priced by its own roofline.
  if (p_.op_tables && family.op_tables_apply()) tables_ = OpTablePricing(p_.op_tables->set, sc_, p_.efficiency.nvlink);
  // Without HiSparse, SGLang decodes DSA with bf16 KV on Hopper through fa3 over a page table of the K selected rows,
  // at the real head count (no padding to 64); with HiSparse, or fp8 KV, through FlashMLA (sglang_decode_path.md §1).
  // The fa3 term is priced only from a GPU's op table (the collector times it on sm90 only, where SGLang picks it).
  fa3_ = !hisparse_server && sc_.deployment.kv_dtype == KvDtype::kBf16 && tables_.has_term("dense_attention");
  if (p_.step && !m.calibrated_by(p_.step->model))
    throw_error("{}: the per-op calibration is for model {}, the scenario's model is {} (use --step-calibration none "
                "or a calibration of this model)", sc_.source, p_.step->model, m.name);
}

double DecodeCostModel::fp8_peak() const {
  return sc_.hardware.fp8_flops > 0 ? sc_.hardware.fp8_flops : sc_.hardware.bf16_flops;
}

std::vector<DecodeOpWork> DecodeCostModel::deployed_ops(double batch, double context) const {
  const int B = std::max(1, static_cast<int>(std::ceil(batch)));
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(std::llround(context)));
  const int ep = std::max(1, sc_.deployment.decode.ep);
  // fp8 projections, as the FP8 checkpoints ship them; a model served with bf16 projections (NVFP4 checkpoints keep
  // attention and the shared expert in bf16) reads their bf16 variants instead.
  if (!(sc_.model.dense_weight_bytes_per_param >= 2)) return decode_layer_ops(sc_.model, B, n, ep);
  std::vector<DecodeOpWork> ops;
  for (DecodeOpWork& w : decode_layer_ops(sc_.model, B, n, ep, /*both_dtypes=*/true))
    if (!(w.family == "gemm" && w.dtype == "fp8") && !(w.family == "indexer" && w.dtype == "bf16"))
      ops.push_back(std::move(w));
  return ops;
}

SimTime DecodeCostModel::op_ns(const char* op, const std::vector<DecodeOpWork>& work, int count) const {
  const std::string name = op;
  const DecodeOpWork* w = nullptr;
  for (const DecodeOpWork& x : work)  // top-k's name says whether every position is selected
    if (x.op == name || (name == "topk" && x.op == "topk_all")) w = &x;
  if (!w) throw_error("cost model: {} is not an op of core/decode_layer_ops.h", name);
  // The engine's own kernel timed on this GPU (graph-timed: its gap to the next kernel included) comes first.
  if (const SimTime t = tables_.decode_op_ns(w->op, w->tokens); t >= 0) return t * count;
  if (p_.step && is_calibrated(*w)) {
    const OpTimeModel* m = p_.step->find(w->op, w->dtype);
    if (!m) throw_error("per-op calibration of {}: no model for {} ({})", p_.step->device, w->op, w->dtype);
    // A graph-timed op already holds its gap to the next kernel.
    return seconds_to_ns_ceil(m->predict(*w) * 1e-6 * count);
  }
  const double peak = w->dtype == "fp8" ? fp8_peak() : sc_.hardware.bf16_flops;
  return kernel(w->flops, w->bytes, peak, efficiency_for(p_.efficiency, w->family)) * count;
}

SimTime DecodeCostModel::ops_ns(std::initializer_list<const char*> ops, const std::vector<DecodeOpWork>& work) const {
  SimTime t = 0;
  for (const char* op : ops) t += op_ns(op, work);
  return t;
}

SimTime DecodeCostModel::roofline(double flops, double bytes, double peak_flops, const RooflineEfficiency& e) const {
  const double t = std::max(flops / (peak_flops * e.compute), bytes / (sc_.hardware.hbm_bytes_per_s * e.memory));
  return seconds_to_ns_ceil(t);
}

GpuPhases DecodeCostModel::gpu_phases(const GpuBatch& b) const {
  GpuPhases out;
  if (b.requests == 0) return out;
  if (pricing_ == LayerPricing::kGqaKv) return gqa_phases(b);
  if (pricing_ == LayerPricing::kCompressed) return dsv4_phases(b);
  const ModelSpec& m = sc_.model;
  const double B = static_cast<double>(b.requests);
  const auto& e = p_.efficiency;
  // The layer's ops at this batch and its mean context: projections, norms and top-k per op (top-k's work is linear
  // in the summed context); the indexer's scoring and the attention from the batch's exact sums.
  const std::vector<DecodeOpWork> work = deployed_ops(B, b.sum_n / B);
  // Indexer scoring: every token's fp8 key (with its scale) is read and scored by every indexer head; an fp32 score
  // is written per key. Once per selecting layer.
  const double idx_flops = 2.0 * m.indexer_heads * m.indexer_head_dim * b.sum_n;
  const double idx_bytes = b.sum_n * (indexer_key_bytes_ + 4.0);
  // DeepGEMM's fp8 MQA logits and SGLang's top-k from the op tables where they hold them (at the batch and mean
  // context), else the roofline and the per-op model.
  const SimTime logits = tables_.term_ns("indexer_logits", B, b.sum_n / B);
  const SimTime topk = tables_.term_ns("indexer_topk", B, b.sum_n / B);
  out.indexer = (ops_ns({"indexer_q", "indexer_k", "indexer_w"}, work) +
                 (logits >= 0 ? logits : kernel(idx_flops, idx_bytes, fp8_peak(), e.indexer))) *
                selecting_layers_;
  out.topk = (topk >= 0 ? topk : op_ns("topk", work)) * selecting_layers_;
  // Sparse attention over Σ min(n, K) cached rows (bf16 math, FlashMLA-style), reading the query and writing the
  // latent output per head; the MLA projections, the absorbed w_kv_b, and the norms/RoPE around them.
  const double attn_flops = b.sum_attended * m.attention_heads * (m.cache_row_width() + m.kv_lora_rank) * 2.0;
  const double attn_bytes = b.sum_attended * kv_row_bytes_ +
                            B * m.attention_heads * (m.cache_row_width() + m.kv_lora_rank) * 2.0;
  // With a measured FlashMLA table (sim/cost/terms/attention_table.h) the kernel is its graph-timed time, which holds its
  // gap to the next kernel, at this GPU's batch, heads and mean attended rows; else the roofline.
  // The op tables' FlashMLA row (the engine's kernel at this shape, timed at K rows per request) supersedes the
  // attention table when every request attends its full K (mean attended rows = top_k); shorter contexts keep the
  // attention table, which interpolates in K.
  const SimTime table_attention =
      fa3_ ? tables_.term_ns("dense_attention", B, b.sum_attended / B)
      : b.sum_attended / B >= m.top_k ? tables_.term_ns("sparse_attention", B) : SimTime{-1};
  const SimTime sparse_attention =
      table_attention >= 0 ? table_attention
      : p_.attention.table
          ? seconds_to_ns_ceil(p_.attention
                                   .layer_us(sc_.deployment.kv_dtype, B, m.attention_heads, b.sum_attended / B,
                                             attn_flops, attn_bytes, sc_.hardware)
                                   .us *
                               1e-6)
          : kernel(attn_flops, attn_bytes, sc_.hardware.bf16_flops, e.attention);
  out.attention = (ops_ns({"rmsnorm_hidden", "q_a", "rmsnorm_q", "q_b", "rope_q", "kv_a", "rmsnorm_kv", "w_kv_b_q",
                           "w_kv_b_o", "o_proj"},
                          work) +
                   sparse_attention) *
                  layers_;
  out.swap_in = swap_in_ns(b);
  return out;
}

SimTime DecodeCostModel::swap_in_ns(const GpuBatch& b) const {
  if (!hisparse_) return 0;
  const double B = static_cast<double>(b.requests), K = sc_.deployment.hisparse.top_k;
  const double H = sc_.deployment.hisparse.device_buffer_size;
  SimTime t = 0;
  if (p_.swap_in_cost.calibrated) {
    // Measured on this device (one call per layer); the slow path walks the H slots of the LRU.
    t = p_.swap_in_cost.plan_ns(b.requests, b.slow_path > 0 ? static_cast<int64_t>(H) : 0) * swap_in_layers();
  } else {
    // Hit detection: read the K selections and write slot ids; the slow path also walks slot_token and lru.
    const double bytes = B * K * 8.0 + static_cast<double>(b.slow_path) * H * 8.0;
    t = kernel(0, bytes, fp8_peak(), p_.efficiency.swap_in) * swap_in_layers();
  }
  // SGLang's coordinator clears the B × K int32 output slots before each layer's swap-in kernel (swap_in_selected_pages:
  // top_k_device_locs fill -1): one more memset kernel per layer in the graph (docs/cost_model.md, HiSparse's
  // decode path in SGLang).
  return t + hisparse_output_clear_ns(b.requests);
}

SimTime DecodeCostModel::hisparse_output_clear_ns(int64_t requests) const {
  const double bytes = static_cast<double>(requests) * sc_.deployment.hisparse.top_k * 4.0;
  return kernel(0, bytes, fp8_peak(), p_.efficiency.dense) * swap_in_layers();
}

int DecodeCostModel::swap_in_layers() const {
  const bool shares = c4_layers_ == 0 && selecting_layers_ < layers_;
  return shares && sc_.deployment.hisparse_prefetch ? selecting_layers_ : offload_layers();
}

SimTime DecodeCostModel::lm_head_ns(double T, std::string* source) const {
  if (const SimTime t = tables_.term_ns("lm_head", T); t >= 0) {
    if (source) *source = tables_.term_source("lm_head");
    return t;
  }
  const double tp = std::max(1, sc_.deployment.decode.tp);
  if (source) *source = "modelled (roofline of the bf16 weights over the TP group, efficiency.dense)";
  return kernel(2.0 * lm_head_params_ / tp * T, lm_head_params_ / tp * 2.0, sc_.hardware.bf16_flops, p_.efficiency.dense);
}

SimTime DecodeCostModel::expert_all_to_all_ns(double tokens, std::string* source) const {
  const ModelSpec& m = sc_.model;
  const int ep = std::max(1, sc_.deployment.decode.ep);
  if (ep <= 1 || !(tokens > 0)) return 0;
  if (!a2a_site_.internode) {  // the tables hold one node's DeepEP (2 and 4 GPUs measured, 8 modelled from them)
    std::string ds, cs;
    const SimTime d = tables_.expert_collective_ns("ep_dispatch", ep, tokens, a2a_site_.link_bytes_per_s, &ds);
    const SimTime c = tables_.expert_collective_ns("ep_combine", ep, tokens, a2a_site_.link_bytes_per_s, &cs);
    if (d >= 0 && c >= 0) {
      if (source) *source = ds == cs ? ds : ds + "; " + cs;
      return d + c;
    }
  }
  if (source)
    *source = !p_.deepep.empty() ? "modelled (DeepEP's published low-latency times by EP size, cost file deepep:)"
                                 : "modelled (the site's latency twice + the payload over NVLink)";
  if (!p_.deepep.empty())
    return deepep_ns(p_.deepep, ExpertOp::kDispatch, ep, tokens, m.hidden_size, m.experts_per_token, a2a_site_) +
           deepep_ns(p_.deepep, ExpertOp::kCombine, ep, tokens, m.hidden_size, m.experts_per_token, a2a_site_);
  const double bytes = tokens * m.experts_per_token * m.hidden_size * 3.0 * (ep - 1) / ep;
  const double nv = sc_.hardware.nvlink_bytes_per_s > 0 ? sc_.hardware.nvlink_bytes_per_s : sc_.hardware.hbm_bytes_per_s;
  return 2 * a2a_site_.latency_ns + transfer_ns(bytes, nv * p_.efficiency.nvlink);
}

SimTime DecodeCostModel::hidden_allreduce_ns(double tokens, int gpus, std::string* source) const {
  // NCCL's all-reduce from the op tables (one node only; any model: the collective does not depend on it).
  if (!allreduce_site_.internode)
    if (const SimTime t = table_all_reduce_ns(p_.op_tables ? p_.op_tables->set.get() : nullptr, gpus, tokens * sc_.model.hidden_size * 2.0,
                                              allreduce_site_.link_bytes_per_s, p_.efficiency.nvlink, source);
        t >= 0)
      return t;
  if (source)
    *source = fmt::format("modelled (ring over the {} link, all_reduce_latency_{})",
                          allreduce_site_.internode ? "internode" : "intranode",
                          allreduce_site_.internode ? "internode" : "intranode");
  return allreduce_ns(tokens * sc_.model.hidden_size * 2.0, gpus, allreduce_site_, p_.efficiency.nvlink);
}

SimTime DecodeCostModel::prefill_time(int64_t tokens) const {
  if (tokens <= 0) return 0;
  if (pricing_ == LayerPricing::kGqaKv) return gqa_prefill_time(tokens);
  const ModelSpec& m = sc_.model;
  const HardwareSpec& hw = sc_.hardware;
  const double gpus = std::max(1, sc_.deployment.prefill.gpus);
  const double n = static_cast<double>(tokens);
  const double K = m.top_k;
  // Dense work of every active parameter, plus the indexer's causal n²/2 scoring and sparse attention
  // over min(position, K) rows per token.
  const double attended = n <= K ? n * (n + 1) / 2 : K * (K + 1) / 2 + (n - K) * K;
  const double flops = 2.0 * m.active_params * n +
                       (c4_layers_ > 0 ? dsv4_prefill_attention_flops(n)
                                       : 2.0 * m.indexer_heads * m.indexer_head_dim * (n * (n + 1) / 2) * selecting_layers_ +
                                             2.0 * m.attention_heads * (m.cache_row_width() + m.kv_lora_rank) * attended *
                                                 layers_);
  const double chunks = std::ceil(n / p_.prefill_chunk_tokens);
  // Prefill runs outside CUDA graphs, but its kernels are long enough that the host launches run ahead of them.
  const double t = std::max(flops / (gpus * fp8_peak() * p_.efficiency.prefill.compute),
                            chunks * m.weight_bytes / gpus / (hw.hbm_bytes_per_s * p_.efficiency.prefill.memory));
  return seconds_to_ns_ceil(t);
}

}  // namespace hisparse::sim
