// @brief ModelSpec: the per-token memory and compute figures of a model (scenarios/models/*.yaml): MLA + DSA
// (DeepSeek-V3.2, GLM-5) or grouped-query attention (MHA when kv heads = heads), optionally with sliding-window layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/topk_schedule.h"

namespace hisparse {

/// How a layer's KV cache is laid out. MLA caches one latent row per token (DeepSeek's sparse attention adds an
/// indexer key); GQA caches K and V of num_key_value_heads heads (SGLang's MHATokenToKVPool).
enum class AttentionKind { kMla, kGqa };

struct ModelSpec {
  std::string name;
  /// The model family's registry name (core/family/family_registry.h); empty = the family that claims the shapes.
  std::string family;
  /// A model whose decode layer has exactly this other model's shapes (projections, heads, experts): per-op
  /// calibrations measured on that model apply to this one (`layer_shapes_of:`; empty = its own name only).
  std::string layer_shapes_of;
  bool calibrated_by(const std::string& calibration_model) const {
    return calibration_model == name || (!layer_shapes_of.empty() && calibration_model == layer_shapes_of);
  }
  AttentionKind attention = AttentionKind::kMla;  // YAML `attention: mla | gqa` (absent: mla)
  // GQA only (attention: gqa).
  int num_key_value_heads = 0;       // KV heads (= attention_heads for MHA)
  int head_dim = 0;                  // per head, K and V alike
  int sliding_window = 0;            // tokens a sliding layer attends (0 = no sliding layers)
  std::vector<bool> sliding_layers;  // per decoder layer: true = sliding window (empty when sliding_window = 0)
  // Hybrid linear attention (Qwen3-Next's Gated DeltaNet; SGLang's Mamba pools), GQA only. A linear layer keeps a
  // fixed conv + SSM state per request instead of a KV cache.
  std::vector<bool> linear_layers;   // per decoder layer: true = linear attention (empty = none)
  int linear_num_key_heads = 0;
  int linear_num_value_heads = 0;
  int linear_key_head_dim = 0;
  int linear_value_head_dim = 0;
  int linear_conv_kernel_dim = 0;
  // Weight precision as served, both attention kinds (GQA defaults dense to bf16 2; MLA leaves both 0).
  double dense_weight_bytes_per_param = 0;   // attention / dense-MLP / shared-expert projections (bf16: 2; MLA 0 =
                                             // the fp8 projections the FP8 checkpoints ship)
  double expert_weight_bytes_per_param = 0;  // routed experts (NVFP4 0.5625, MXFP4 0.53125; 0 = the cost model's
                                             // weight_bytes_per_param)
  int layers = 0;                    // decoder layers that hold a KV cache (DeepSeek-V3.2: 61)
  int mtp_layers = 0;                // extra multi-token-prediction layers with their own KV (DeepSeek-V3.2: 1)
  int kv_lora_rank = 0;              // latent width (512), also used as V
  int qk_rope_head_dim = 0;          // rope part of the cached row (64)
  int64_t latent_row_bytes = 0;      // bytes per token per layer, bf16 (512+64)*2 = 1152
  int64_t latent_row_bytes_fp8 = 0;  // bytes per token per layer in FlashMLA's fp8 layout (656)
  int indexer_heads = 0;             // lightning indexer query heads (64)
  int indexer_head_dim = 0;          // (128)
  int64_t indexer_key_bytes = 0;     // bytes per token per layer of the indexer key cache (fp8 128 + fp32 scale = 132)
  int attention_heads = 0;           // query heads of MLA (128)
  int top_k = 0;                     // tokens selected per step per layer (2048)
  int topk_layer_group = 1;          // index_topk_freq: layers sharing one top-k selection (1 = every layer selects)
  int topk_skip_offset = 1;          // index_skip_topk_offset: layer l (0-based) selects (is an anchor) iff
                                     // max(l − offset + 1, 0) mod topk_layer_group = 0 (vLLM/SGLang's schedule)
  // DeepSeek-V4 compressed attention (empty for every other model). Per layer, main layers then MTP layers, as
  // config.json's compress_ratios: 0 = sliding window only, 4 = C4 (compressed sparse attention: the indexer picks
  // top_k of the compressed entries; what HiSparse offloads), 128 = C128 (heavily compressed, dense).
  std::vector<int> compress_ratios;
  int window_size = 0;                   // sliding window every V4 layer keeps (config sliding_window, 128)
  int64_t latent_row_bytes_nvfp4 = 0;    // bytes per cached entry in the NVFP4 KV layout (0 = not published)
  // V4's grouped low-rank output projection (config o_groups, o_lora_rank): o_groups groups of heads each project to
  // o_lora_rank, then o_groups × o_lora_rank → hidden (0 = a dense heads × v_head_dim → hidden o_proj).
  int o_groups = 0, o_lora_rank = 0;
  double weight_bytes = 0;           // all weights as deployed (FP8 ≈ 690e9 with MTP)
  // Weights each attention-TP group holds whole: attention + indexer projections of all KV layers and the token
  // embedding. With attention data parallelism the attention TP size is tp / dp, so each GPU holds dp / tp of
  // these (all of them when dp = tp). 0 = treat every weight as sharded over tp.
  double dp_replicated_weight_bytes = 0;
  int vocab_size = 0;                // 129280
  // Compute figures used by the cost model (sim/).
  int hidden_size = 0;               // 7168
  int dense_layers = 0;              // first layers with a dense MLP (3)
  int routed_experts = 0;            // 256
  int experts_per_token = 0;         // 8
  int shared_experts = 0;            // 1
  int moe_intermediate_size = 0;     // 2048
  int dense_intermediate_size = 0;   // 18432
  int q_lora_rank = 0;               // 1536
  int qk_nope_head_dim = 0;          // 128
  int v_head_dim = 0;                // 128
  double active_params = 0;          // parameters touched per token (≈ 37e9)

  int kv_layers() const { return layers + mtp_layers; }
  /// IndexShare / IndexCache (core/topk_schedule.h): whether decoder layer l runs its own indexer and top-k (an
  /// anchor); the others reuse the nearest anchor below them. GLM-5.2: layers 0, 1, 2, 6, 10, ..., 74 — 21 of 78.
  bool is_topk_anchor(int l) const { return hisparse::is_topk_anchor(l, topk_layer_group, topk_skip_offset); }
  int topk_anchor_layers() const {
    int n = 0;
    for (int l = 0; l < layers; ++l) n += is_topk_anchor(l) ? 1 : 0;
    return n;
  }
  /// Layers holding an indexer-key cache: the anchors and the MTP layers (a reusing layer never reads its own keys;
  /// the draft layer keeps its own, SGLang #30531's draft pool of 576 + 132 B per token).
  int indexer_key_layers() const { return topk_anchor_layers() + mtp_layers; }
  bool is_gqa() const { return attention == AttentionKind::kGqa; }
  /// DeepSeek Sparse Attention's lightning indexer: what HiSparse's selection and pools need.
  bool has_sparse_indexer() const { return attention == AttentionKind::kMla && indexer_head_dim > 0 && top_k > 0; }
  int sliding_layer_count() const {
    int n = 0;
    for (bool s : sliding_layers) n += s ? 1 : 0;
    return n;
  }
  int linear_layer_count() const {
    int n = 0;
    for (bool l : linear_layers) n += l ? 1 : 0;
    return n;
  }
  bool has_linear_attention() const { return linear_layer_count() > 0; }
  /// Layers that attend (and cache) every token: all of them less the sliding-window and linear-attention ones.
  int full_attention_layer_count() const { return kv_layers() - sliding_layer_count() - linear_layer_count(); }
  bool is_compressed() const { return !compress_ratios.empty(); }
  /// Layers whose selections HiSparse serves (and can miss): every main layer; DeepSeek-V4 its C4 layers.
  int offload_layers() const { return is_compressed() ? compressed_layer_count(4) : layers; }
  /// Main-model layers (MTP excluded, as SGLang's DSV4 pool slices compress_ratios by the model's own layers) with
  /// this compression ratio.
  int compressed_layer_count(int ratio) const {
    int n = 0;
    for (int i = 0; i < layers && i < static_cast<int>(compress_ratios.size()); ++i) n += compress_ratios[i] == ratio;
    return n;
  }
  int cache_row_width() const { return kv_lora_rank + qk_rope_head_dim; }  // 576
};

}  // namespace hisparse
