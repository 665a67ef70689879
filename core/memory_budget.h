// @brief The memory arithmetic of a scenario (docs/capacity.md): per-token bytes, HBM budget, SGLang pool sizes,
// per-request bytes — every figure carries the formula that produced it, so `hisparse info` and `hisparse plan` can
// print both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"

namespace hisparse {

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
};

struct MemoryBudget {
  // Per token.
  Figure kv_layers;                  // layers + MTP layers
  Figure latent_row_bytes;           // per token per layer, in the deployment's KV dtype
  Figure indexer_key_bytes;          // per token per layer
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
  std::vector<SeqLenBudget> per_seq_len;

  /// Every scalar figure above in print order.
  std::vector<const Figure*> figures() const;
};

/// The sequence lengths `hisparse info` reports by default.
const std::vector<int64_t>& default_seq_lens();

MemoryBudget compute_memory_budget(const Scenario& scenario,
                                   const std::vector<int64_t>& seq_lens = default_seq_lens());

// Building blocks, usable on their own by the planner.
int64_t latent_row_bytes(const ModelSpec& model, KvDtype dtype);
double weights_per_gpu_bytes(const ModelSpec& model, const InstanceSpec& inst, double weight_bytes);
/// SGLang's max_total_num_tokens: floor(budget / cell) rounded down to whole pages.
int64_t pool_tokens(double budget_bytes, double cell_bytes, int page_size);
/// SGLang's host pool: (floor(tokens / page) + 1) × page.
int64_t host_pool_tokens(int64_t logical_tokens, int page_size);
int64_t round_up_to_page(int64_t tokens, int page_size);

}  // namespace hisparse
