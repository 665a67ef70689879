// @brief DecodeCostModel: time of each decode-step operation (measured per-op models where calibrated, else the
// roofline at the cost-model file's efficiencies) and of prefill, from the model, hardware and cost parameters. Pure arithmetic: the engine decides when each piece runs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/decode_layer_ops.h"
#include "core/deployment_spec.h"
#include "core/family/model_family.h"
#include "core/gqa_memory_budget.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/terms/op_table_pricing.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// What one GPU serves in one step (attention is data-parallel: each GPU has its own requests).
struct GpuBatch {
  int64_t requests = 0;
  double sum_n = 0;         // Σ sequence length (indexer reads every token's key)
  double sum_attended = 0;  // Σ min(n, K) (sparse attention rows); GQA: rows a full-attention layer reads
  double sum_window_attended = 0;  // GQA sliding layers: Σ min(n, K, window) rows a sliding layer reads
  int64_t slow_path = 0;    // requests with n > H (hit detection walks the LRU)
  int64_t swap = 0;         // requests in the device-buffer (swap) mode: all of HiSparse's; dynamic: the demoted ones
};

/// One term of the MoE phase (sim/cost/step/moe_phase.cpp): its time and where it comes from, so a report can say which
/// terms are measured (an op table named) and which modelled or assumed.
struct MoeTerm {
  std::string name;            // dense | routed_experts | dispatch_combine | moe_all_reduce | dense_all_reduce |
                               // lm_head | sampling | scheduler | graph_and_sync | mlp (GQA)
  SimTime ns = 0;
  bool communication = false;  // part of MoeTime::all_to_all (else of compute)
  std::string source;          // "measured (<table> op <op>)", "modelled (…)", "<kind> (cost term <name>)"
};

/// Compute time of one GPU's step before the expert all-to-all, split by operation (all layers summed). A GQA model
/// has no indexer, top-k or swap-in: its whole layer is `attention` (QKV / O projections, norms, RoPE and the
/// memory-bound read of every cached K and V row, window-capped on sliding layers).
struct GpuPhases {
  SimTime indexer = 0;
  SimTime topk = 0;
  SimTime swap_in = 0;    // hit-detection kernel (0 in full-KV mode)
  SimTime attention = 0;  // projections + sparse attention
  SimTime before_io() const { return indexer + topk + swap_in; }
  SimTime compute() const { return indexer + topk + swap_in + attention; }
};

/// DeepSeek-V4: what its step prices without a measured kernel (mHC mixing, hash routing; NVFP4 attention), one line
/// for plan's warnings and advise's notes; "" for every other model.
std::string dsv4_modelled_terms_note(const Scenario& scenario);

class DecodeCostModel {
 public:
  /// `hisparse`: this batch runs HiSparse's decode path (swap-in, attention on the device buffer). `hisparse_server`:
  /// the server was launched with HiSparse (it picks the attention backend for every batch, resident ones included;
  /// by default the same as `hisparse`).
  DecodeCostModel(const Scenario& scenario, const CostParams& params, bool hisparse);
  DecodeCostModel(const Scenario& scenario, const CostParams& params, bool hisparse, bool hisparse_server);

  GpuPhases gpu_phases(const GpuBatch& batch) const;
  /// MoE/MLP + its collectives + LM head + the step's fixed overhead for the whole instance (it runs in lockstep).
  ///   instance_tokens: tokens in the step over all GPUs; max_gpu_tokens: the largest per-GPU batch.
  ///   Returns the compute part and, separately, the all-to-all communication part.
  struct MoeTime {
    SimTime compute = 0;
    SimTime all_to_all = 0;
  };
  MoeTime moe_phase(double instance_tokens, double max_gpu_tokens) const;
  /// The terms moe_phase sums, in step order (compute terms sum to MoeTime::compute, communication ones to
  /// all_to_all), each with its source (left empty without `with_sources`: moe_phase runs on every simulated step);
  /// the busiest GPU's `max_gpu_tokens` sets every per-GPU term.
  std::vector<MoeTerm> moe_terms(double instance_tokens, double max_gpu_tokens, bool with_sources = true) const;
  /// The DeepEP mode of a decode step when the phase dispatches with DeepEP (attention DP, ep > 1), else "": SGLang's
  /// DeepEPMode.resolve gives `auto` LOW_LATENCY when no DP rank has extend in the batch (docs/sglang_decode_path.md §5).
  std::string decode_deepep_mode() const { return deepep_ ? sc_.deployment.decode_deepep_mode() : ""; }
  /// HiSparse: SGLang's clear of the `requests` × K int32 output slots before each layer's swap-in kernel (one memset
  /// kernel per layer, all layers; part of `swap_in`).
  SimTime hisparse_output_clear_ns(int64_t requests) const;
  /// HiSparse: the hit-detection (swap-in plan) kernel and the output clear of every layer that runs the swap-in
  /// kernel (0 in full KV).
  SimTime swap_in_ns(const GpuBatch& batch) const;
  /// Layers that run SGLang's swap-in kernel each step: every offloaded layer, except that with the IndexShare
  /// prefetch (deployment hisparse_prefetch, SGLang's default) the layers sharing an anchor's top-k only wait for the
  /// side stream's copy and run none (docs/sglang_decode_path.md §3).
  int swap_in_layers() const;
  /// The decode attention backend SGLang picks (docs/sglang_decode_path.md §1): "fa3" (HiSparse off, bf16 KV, on a
  /// GPU whose op table times the fa3 term), else "flashmla" (flashmla_sparse / flashmla_kv).
  const char* attention_backend() const { return fa3_ ? "fa3" : "flashmla"; }
  /// The LM head (bf16 weights, vocabulary split over the TP group) over `instance_tokens`, one kernel (part of moe).
  SimTime lm_head_ns(double instance_tokens, std::string* source = nullptr) const;
  int selecting_layers() const { return selecting_layers_; }  // layers that run the indexer and top-k
  /// Prefill of one request of `tokens` on one prefill instance (all its GPUs).
  SimTime prefill_time(int64_t tokens) const;

  int layers() const { return layers_; }
  double kv_row_bytes() const { return kv_row_bytes_; }           // latent (GQA: K + V) row bytes per token per layer
  double indexer_key_bytes() const { return indexer_key_bytes_; } // indexer key bytes per token per layer
  int kv_layers() const { return kv_layers_; }
  // DeepSeek-V4 (ModelSpec::is_compressed): HiSparse offloads the C4 layers' entries, one per 4 tokens; elsewhere
  // every layer's tokens. The miss copy runs once per offloaded layer; the backup copies each new entry.
  int offload_layers() const { return c4_layers_ > 0 ? c4_layers_ : layers_; }
  int compress_ratio() const { return c4_layers_ > 0 ? 4 : 1; }
  /// Rows one request backs up per decode token: one per KV layer; DSV4 one C4 entry per 4 tokens per C4 layer.
  double backup_rows_per_token() const { return c4_layers_ > 0 ? c4_layers_ / 4.0 : kv_layers_; }

 private:
  /// The ops of one layer as deployed (fp8 projections, bf16 when the model serves dense_weight_bytes_per_param >= 2)
  /// at `batch` tokens per GPU and mean context `context`.
  std::vector<DecodeOpWork> deployed_ops(double batch, double context) const;
  /// Time of one op of `work` (by name; top-k's either form), `count` times: its step-calibration model where the
  /// op is calibrated (see is_calibrated), else its roofline at the family's efficiency plus one graph gap.
  SimTime op_ns(const char* op, const std::vector<DecodeOpWork>& work, int count = 1) const;
  SimTime ops_ns(std::initializer_list<const char*> ops, const std::vector<DecodeOpWork>& work) const;
  /// max(flops / (peak · e.compute), bytes / (hbm · e.memory)), rounded up to a nanosecond.
  SimTime roofline(double flops, double bytes, double peak_flops, const RooflineEfficiency& e) const;
  /// One kernel's roofline plus the gap to the next kernel of the step's CUDA graph.
  SimTime kernel(double flops, double bytes, double peak_flops, const RooflineEfficiency& e) const {
    return roofline(flops, bytes, peak_flops, e) + p_.graph_kernel_gap_ns;
  }
  double fp8_peak() const;
  // GQA models (ModelSpec::is_gqa): the layer's work from the model's shapes, roofline at the cost file's efficiencies.
  GpuPhases gqa_phases(const GpuBatch& batch) const;
  MoeTime gqa_mlp_phase(double instance_tokens, double max_gpu_tokens) const;
  SimTime gqa_prefill_time(int64_t tokens) const;
  /// One GEMM of `out × in` weights at `tokens` rows, weights of `bytes_per_param`.
  SimTime gemm_ns(double out, double in, double tokens, double bytes_per_param) const;
  /// One MoE layer's expert dispatch (fp8) and combine (bf16) of `tokens` per GPU: DeepEP's published low-latency
  /// times by EP size at the site (sim/cost/terms/collective_cost.h); without a table, the site's latency twice plus the
  /// (ep − 1)/ep of the payload that leaves the GPU over the link at the NVLink efficiency.
  SimTime expert_all_to_all_ns(double tokens, std::string* source = nullptr) const;
  /// One all-reduce of `tokens` bf16 hidden states over the instance's `gpus` GPUs (0 for one GPU).
  SimTime hidden_allreduce_ns(double tokens, int gpus, std::string* source = nullptr) const;
  /// "measured (<table>)" when the op tables price every op of `ops` at `batch`, "modelled (…)" when none, else how
  /// many of them are measured.
  std::string ops_source(std::initializer_list<const char*> ops, double batch) const;
  /// "<kind> (cost term <name>)" from the cost-model file's labels (CostParams::sources).
  std::string cost_term_source(const std::string& term) const;
  // DeepSeek-V4 (sim/cost/step/decode_cost_model_dsv4.cpp): window, C4 and C128 attention, indexer over C4 entries,
  // compressors and their state reads, per layer type.
  GpuPhases dsv4_phases(const GpuBatch& batch) const;
  /// Prefill's attention and indexer FLOPs of `n` tokens over all layers (causal; window, C4 top-k, C128 rows).
  double dsv4_prefill_attention_flops(double n) const;
  /// The MoE-phase terms V4 adds at `tokens` per GPU: mHC mixing (hc_pre / hc_post around attention and FFN of every
  /// layer, hc_head once) and hash routing (the first layers' tid2eid lookup), each modelled (roofline) with sources.
  void dsv4_moe_terms(double tokens, bool with_sources, std::vector<MoeTerm>& out) const;
  int c4_layers_ = 0, c128_layers_ = 0;
  int kv_heads_ = 0;           // GQA: KV heads one GPU holds (replicated when attention TP > KV heads)
  int full_attn_layers_ = 0, sliding_attn_layers_ = 0;
  int linear_layers_ = 0;         // GQA + Mamba: linear-attention layers, each reading and writing a request's state
  MambaLayerState mamba_state_;   // one request's state in one such layer on this GPU (core/gqa_memory_budget.h)

  const Scenario& sc_;
  CostParams p_;
  LayerPricing pricing_;  // which layer terms the model's family prices (core/family/model_family.h)
  bool hisparse_;
  bool fa3_ = false;  // the OFF arm's attention is fa3's (see attention_backend())
  int layers_ = 0, kv_layers_ = 0, selecting_layers_ = 0;
  double kv_row_bytes_ = 0, indexer_key_bytes_ = 0;
  double expert_params_ = 0;   // per expert (gate, up, down)
  double lm_head_params_ = 0;
  CollectiveSite a2a_site_, allreduce_site_;  // where the instance's collectives run (sim/cost/layout/rank_layout.h)
  // The engine's kernels timed on this GPU (CostParams::op_tables): a term they hold is their time, ahead of the
  // per-op calibration and the roofline; one they do not hold keeps its modelled price.
  OpTablePricing tables_;
  bool deepep_ = false;  // attention DP with experts spread: DeepEP dispatch/combine and DeepGEMM's grouped layouts
};

}  // namespace hisparse::sim
