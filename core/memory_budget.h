// @brief The memory arithmetic of a scenario (docs/capacity.md): per-token bytes, HBM budget, SGLang pool sizes,
// per-request bytes — every figure carries the formula that produced it, so `hisparse info` and `hisparse plan` can
// print both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"

namespace hisparse {

class ModelFamily;  // core/family/model_family.h

/// One named figure: its value, unit and the formula (symbols = numbers) it came from.
struct Figure {
  std::string key;      // stable identifier (JSON key), e.g. "device_pool_tokens"
  std::string label;    // human label
  double value = 0;
  std::string unit;     // "B", "B/token", "tokens", "requests", "layers", "" (plain number)
  std::string formula;  // e.g. "kv_layers × latent_row_bytes = 62 × 1152"
};

/// What one request of `seq_len` tokens costs under each mode, and how many fit in the pools (memory only).
struct SeqLenBudget {
  int64_t seq_len = 0;
  Figure full_kv_bytes;          // whole latent + indexer cache on GPU (full-KV mode)
  Figure full_latent_bytes;      // of which latent
  Figure full_indexer_bytes;     // of which indexer keys
  Figure hisparse_hbm_bytes;     // device buffer (latent) + indexer keys of all tokens
  Figure hisparse_host_bytes;    // latent of all tokens in the host pool
  Figure max_requests_full;      // per dp rank, from the full-KV device pool
  Figure max_requests_hisparse;  // per dp rank, min(device pool / buffer, logical pool / tokens)
  Figure swa_tokens;             // GQA with sliding layers: tokens each sliding layer keeps (window-capped)
};

struct MemoryBudget {
  // The family whose pools these are (core/family/): compute_memory_budget sets it; nullptr = MLA + DSA.
  const ModelFamily* family = nullptr;
  // Its attention label as printed (ModelFamily::attention_label: "mla+dsa", "gqa+swa", ...). For output only:
  // decisions ask `family`.
  std::string attention = "mla+dsa";
  /// `family`, or MLA + DSA for a budget no family built.
  const ModelFamily& model_family() const;
  bool sparse_indexer = true;        // false: every HiSparse figure below is 0 and "not applicable"
  int page_size = 1;
  int64_t sliding_window = 0;        // tokens (0 = none)
  int full_layers = 0, sliding_layer_count = 0;  // KV layers of each kind (MLA: all full)
  int indexer_layers = 0;  // layers with an indexer-key cache (MLA+DSA: top-k anchors + MTP layers; else 0)
  // DeepSeek-V4 ("dsv4", core/dsv4_pool_budget.h): HiSparse offloads the C4 pool, counted in compressed entries
  // (one per 4 tokens); device_pool_tokens / host_pool_tokens / device_buffer_tokens are C4 entries, logical_pool_tokens
  // the full (token) pool; every layer's sliding window, the C128 pool and the compress states stay on the GPU.
  int c4_layers = 0, c128_layers = 0;
  Figure hisparse_swa_pool_tokens;   // DSV4: the sliding-window pool with HiSparse on (the full pool grows with it)
  Figure c128_state_fixed_bytes;     // DSV4: the C128 compress states, sized per request slot before the split
  // GQA only (absent from figures() for MLA).
  Figure kv_heads_per_rank;          // max(1, num_key_value_heads / attention TP)
  Figure full_attention_layers;
  Figure sliding_layers;
  Figure swa_full_tokens_ratio;
  Figure profile_pool_tokens;        // SWA: SGLang's first max_total_num_tokens over the whole cell, before the split
  Figure swa_pool_tokens;            // SWA: tokens of the sliding-layer pool
  // GQA with linear-attention (Mamba-style) layers, "gqa+mamba": SGLang's HybridLinearKVPool holds KV for the full-
  // attention layers only, MambaPool one conv + SSM state per slot for every linear layer.
  int linear_layer_count = 0;
  int64_t mamba_request_cap = 0;     // running requests the Mamba slots allow (0 = no cap)
  Figure linear_layers;
  Figure mamba_state_per_request;    // bytes of one Mamba slot (all linear layers, this GPU's heads)
  Figure mamba_full_memory_ratio;
  Figure mamba_slots;                // max_mamba_cache_size
  Figure mamba_pool_bytes;
  Figure max_requests_by_mamba;      // floor(mamba_slots / 3): SGLang's cap on max_running_requests
  // GQA with SGLang's Double Sparsity (deployment double_sparsity:): the label cache beside K and V.
  bool double_sparse = false;
  Figure ds_heavy_channel_num;       // channels per KV head kept in the label cache
  Figure label_row_bytes;            // per token per layer: kv_heads_per_rank × heavy_channel_num × dtype
  Figure label_bytes_per_token;      // all KV layers
  Figure label_pool_bytes;           // (max_total_num_tokens + 1) × layers × label_row (label_buffer's size + 1 rows)
  // Per token.
  Figure kv_layers;                  // layers + MTP layers
  Figure latent_row_bytes;           // per token per layer, in the deployment's KV dtype (GQA: K + V, key kv_row_bytes)
  Figure indexer_key_bytes;          // per token per layer
  Figure indexer_cache_layers;       // MLA + DSA: KV layers with an indexer-key cache (printed when fewer than all)
  Figure latent_bytes_per_token;     // all KV layers
  Figure indexer_bytes_per_token;    // all KV layers
  Figure full_cell_bytes;            // SGLang cell size without HiSparse
  Figure hisparse_cell_bytes;        // SGLang cell size with HiSparse (indexer × host_to_device_ratio)
  // HBM per GPU.
  Figure hbm_bytes;
  Figure weights_per_gpu_bytes;
  Figure activation_reserve_bytes;
  Figure kv_budget_bytes;            // HBM × mem_fraction_static − weights − reserve
  // SGLang pools per GPU (per dp rank).
  Figure full_pool_tokens;           // max_total_num_tokens without HiSparse
  Figure device_pool_tokens;         // max_total_num_tokens with HiSparse (the hot device pool)
  Figure logical_pool_tokens;        // device × host_to_device_ratio
  Figure indexer_pool_tokens;        // = logical: indexer keys of every logical token stay on GPU
  Figure device_latent_pool_bytes;
  Figure indexer_pool_bytes;
  Figure host_pool_tokens;           // logical rounded to pages (+1 page, as SGLang's HostKVCache)
  Figure host_pool_bytes_per_gpu;
  Figure host_pool_bytes_per_node;
  Figure host_dram_bytes;
  Figure host_dram_left_bytes;       // negative = the host pools do not fit
  // Per request.
  Figure device_buffer_tokens;       // H + page_size
  Figure device_buffer_bytes;        // (H + page_size) × kv_layers × latent_row_bytes
  Figure max_buffers_per_device_pool;
  Figure reserved_decode_tokens;     // per running request, kept free by a PD decode server's admission
  std::vector<SeqLenBudget> per_seq_len;

  /// Every scalar figure above in print order.
  std::vector<const Figure*> figures() const;
};

/// Each family's figures in print order (ModelFamily::figures): MLA (with or without DSA), GQA / MHA and its
/// hybrids (sliding window, Mamba, Double Sparsity), DeepSeek-V4's pools.
std::vector<const Figure*> mla_budget_figures(const MemoryBudget& b);
std::vector<const Figure*> gqa_budget_figures(const MemoryBudget& b);
std::vector<const Figure*> dsv4_budget_figures(const MemoryBudget& b);

/// The sequence lengths `hisparse info` reports by default.
const std::vector<int64_t>& default_seq_lens();

MemoryBudget compute_memory_budget(const Scenario& scenario,
                                   const std::vector<int64_t>& seq_lens = default_seq_lens());

// Per-request arithmetic of the full-KV pools, shared by `info`, `plan` and `plan --strategies` (MLA and GQA alike).
/// Tokens a sliding layer keeps of a request of `tokens`: min(tokens, window + page) (all of them without SWA).
int64_t sliding_tokens_kept(const MemoryBudget& b, int64_t tokens);
/// HBM bytes of a full-KV request of `tokens` on one GPU holding it: every KV layer (latent + indexer key for MLA;
/// K + V for GQA, window-capped on sliding layers).
double full_kv_request_bytes(const MemoryBudget& b, int64_t tokens);
/// The formula of full_kv_request_bytes with its numbers.
std::string full_kv_request_formula(const MemoryBudget& b, int64_t tokens);
/// Requests of `tokens` the full-KV pools hold: floor(full_pool / paged(n)), and for SWA also
/// floor(swa_pool / paged(sliding_tokens_kept(n))); `formula` (optional) gets the arithmetic.
int64_t full_pool_requests(const MemoryBudget& b, int64_t tokens, std::string* formula = nullptr);
/// Requests of `paged` tokens a pool of `pool` tokens admits while SGLang keeps `reserve` tokens free per admitted
/// request (a PD decode server's num_reserved_decode_tokens): the c-th request needs paged ≤ pool − (c − 1) × (paged
/// + reserve), so c = floor((pool + reserve) / (paged + reserve)); reserve 0 is floor(pool / paged). `formula`
/// (optional) gets the arithmetic with `pool_name` as the pool's name.
int64_t requests_in_pool(int64_t pool, int64_t paged, int64_t reserve, const char* pool_name,
                         std::string* formula = nullptr);
/// The same over expected (mix-averaged) footprints, as `advise` sizes a batch of a context mix: floor((pool +
/// reserve) / (paged + reserve)) with `paged` = E[paged seq_len], a part in 10^9 of slack so that a quotient that is
/// a whole number up to rounding counts whole. Equal to the integer form where its arguments are whole.
int64_t requests_in_pool(double pool, double paged, double reserve, const char* pool_name,
                         std::string* formula = nullptr);

/// Fills q.max_requests_full / q.max_requests_hisparse from each mode's memory limit and its formula, both capped at
/// the deployment's max_running_requests when it sets one.
void set_max_requests(SeqLenBudget& q, const DeploymentSpec& d, int64_t full, const std::string& full_formula,
                      int64_t hisparse, const std::string& hisparse_formula);
/// HBM per GPU, the same for every attention kind: fills hbm_bytes, weights_per_gpu_bytes, activation_reserve_bytes
/// and kv_budget_bytes (HBM × mem_fraction_static − weights − reserve, or the deployment's overrides).
void hbm_figures(const Scenario& scenario, MemoryBudget& budget);
/// A number inside a printed formula: exact where it matters (pool bytes), short where the input was round (690e9).
std::string formula_number(double v);

// Building blocks, usable on their own by the planner.
int64_t latent_row_bytes(const ModelSpec& model, KvDtype dtype);
/// GQA: KV heads one GPU holds under attention TP `attention_tp` (SGLang's get_num_kv_heads: max(1, heads / tp)).
int kv_heads_per_rank(const ModelSpec& model, int attention_tp);
/// GQA: K + V bytes per token per layer on one GPU: 2 × kv_heads_per_rank × head_dim × dtype bytes.
int64_t gqa_kv_row_bytes(const ModelSpec& model, KvDtype dtype, int attention_tp);
double weights_per_gpu_bytes(const ModelSpec& model, const InstanceSpec& inst, double weight_bytes);
/// SGLang's max_total_num_tokens: floor(budget / cell) rounded down to whole pages.
int64_t pool_tokens(double budget_bytes, double cell_bytes, int page_size);
/// SGLang's host pool: (floor(tokens / page) + 1) × page.
int64_t host_pool_tokens(int64_t logical_tokens, int page_size);
int64_t round_up_to_page(int64_t tokens, int page_size);

}  // namespace hisparse
