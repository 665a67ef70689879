// @brief The DeepSeek-V4 pool arithmetic (docs/capacity.md "DeepSeek-V4"): how SGLang's DSV4 pool configurator
// splits the KV budget over the sliding-window, C4, C128, indexer and compress-state pools, what HiSparse changes
// (the C4 device pool shrinks by host_to_device_ratio), the request-capacity sizing of SGLang PR #33979 and the
// "full token usage" arithmetic of PR #30909. Every figure carries its formula, as the MLA budget's do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/memory_budget.h"

namespace hisparse {

/// One KV row layout of a DeepSeek-V4 cache entry: the main (attention) row and the C4 indexer key.
struct Dsv4RowSize {
  std::string dtype;      // "bf16", "fp8", "nvfp4"
  int64_t main_bytes = 0;  // per cached entry per layer (0 = the model publishes no such layout)
  int64_t indexer_bytes = 0;
  std::string formula;
};

struct Dsv4PoolBudget {
  std::vector<Dsv4RowSize> rows;  // bf16, fp8, nvfp4 (the deployment's kv_dtype picks one)
  // Layers by compression (main model; the MTP layer is charged through mtp_inflation).
  Figure swa_only_layers, c4_layers, c128_layers, mtp_inflation;
  Figure kv_row_bytes, indexer_key_bytes, window_size, swa_full_tokens_ratio, c4_shrink_factor;
  Figure c4_state_ring, c4_state_bytes, c4_indexer_state_bytes;
  // The C128 compress states: one ring per request slot, charged as fixed bytes before the per-token split.
  Figure c128_state_ring, c128_state_bytes, c128_state_fixed_bytes;
  // Bytes per full token (SGLang's bytes_per_full_token) by term, then the total.
  Figure swa_term, c4_term, c128_term, indexer_term, c4_state_term, bytes_per_full_token;
  MemoryBudget hbm;  // HBM per GPU (hbm_bytes … kv_budget_bytes), as for every model
  // Pools per GPU (dp rank) as SGLang sizes them today (C4 device pool = full / (4 × ratio)).
  Figure full_tokens, swa_tokens, c4_device_entries, c128_entries, c4_state_rows, c4_host_entries, c4_host_bytes;
  // PR #33979: the C4 device pool sized by request capacity instead.
  bool request_capacity_applicable = false;  // needs max_running_requests
  Figure rc_entries_per_request, rc_request_slots, rc_c4_device_entries, rc_c4_device_bytes, rc_base_bytes_per_full_token,
      rc_full_tokens;
  // PR #30909: the full-token usage an empty pool reports, before and after the fix.
  Figure usage_capacity_before, usage_empty_before, usage_empty_after;
  std::vector<std::string> not_modelled;  // terms SGLang has that this arithmetic leaves out, each with its reason
};

/// The compress-state rows SGLang keeps for a DeepSeek-V4 model (deepseek_v4_memory_pool.py
/// get_compress_state_ring_size; the state dtype assumed fp32): the pools size them, the step model prices their reads.
struct Dsv4StateRows {
  int c4_ring = 0, c128_ring = 0;  // rows per ring: 8 / 128, 16 / 256 with a speculative draft
  int64_t c4_state_bytes = 0;          // 2 × 2 × head_dim × 4: (kv, score) × (overlap, current)
  int64_t c4_indexer_state_bytes = 0;  // 2 × 2 × index_head_dim × 4
  int64_t c128_state_bytes = 0;        // 2 × head_dim × 4: (kv, score), no overlap
};
Dsv4StateRows dsv4_state_rows(const ModelSpec& model);

/// Throws hisparse::Error when the model has no compress_ratios (not a DeepSeek-V4 model).
Dsv4PoolBudget compute_dsv4_pool_budget(const Scenario& scenario);

/// The memory budget plan, simulate and advise read (core/memory_budget.h, attention "dsv4"): the pools of
/// compute_dsv4_pool_budget with HiSparse off (full_pool_tokens, swa_pool_tokens) and on (logical_pool_tokens, the C4
/// device / host pools in entries), and per sequence length the bytes and requests of each mode.
MemoryBudget dsv4_memory_budget(const Scenario& scenario, const std::vector<int64_t>& seq_lens);

/// The pools of a DSV4 memory budget in one line: "full KV: full … / sliding-window … tokens; HiSparse: full (logical)
/// … / sliding-window … tokens, C4 device pool … entries, C4 host pool … entries" (info and plan print it).
std::string dsv4_pools_line(const MemoryBudget& budget);

/// What one request of `tokens` holds in the DSV4 pools, and how many such requests each pool admits (per dp rank;
/// the PD decode reserve applies to the token pools as in requests_in_pool). Full KV: the full and sliding-window
/// pools; HiSparse: the C4 device pool (device buffer of H + page / 4 entries, or every entry when they fit), the
/// sliding-window pool, the logical (full) pool and the C4 host pool.
struct Dsv4RequestLimits {
  int64_t c4_entries = 0;     // paged(n) / 4: C4 entries of the request
  int64_t device_slots = 0;   // HiSparse: C4 device entries it holds (min(c4_entries, Q) past the buffer)
  int64_t swa_tokens = 0;     // paged(min(n, window + page)): sliding-window tokens it holds
  int64_t hbm = 0, logical = 0, host = 0;  // requests: device pools (C4 device and SWA), full pool, C4 host pool
  std::string hbm_formula, logical_formula, host_formula;
};
Dsv4RequestLimits dsv4_request_limits(const MemoryBudget& budget, int64_t tokens, bool hisparse);

/// The entry rows of a DeepSeek-V4 model in each KV dtype (bf16, fp8, nvfp4).
std::vector<Dsv4RowSize> dsv4_row_sizes(const ModelSpec& model);

/// PR #30909: SGLang's reported full-token capacity before the fix, min(logical_available, c4_device_available ×
/// compress_ratio); the fix reports logical_available alone.
int64_t dsv4_reported_full_capacity_before_fix(int64_t logical_available, int64_t c4_device_available,
                                               int compress_ratio);

}  // namespace hisparse
