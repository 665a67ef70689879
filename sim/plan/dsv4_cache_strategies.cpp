// @brief `plan --strategies` for DeepSeek-V4 (see cache_strategy_rows.h): the rows read the V4 pool arithmetic of
// core/dsv4_pool_budget.h. A V4 request holds every layer's window, C4 entries (one per 4 tokens) with their indexer
// keys, C128 entries and compress states; HiSparse offloads the C4 entries; eviction keeps min(n, E) tokens in every
// pool; compression (DeltaKV) compresses the C4 entries only — the C128 entries are already 128× fewer and the window
// is what the sliding attention reads at full precision.
#include <algorithm>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "sim/plan/cache_strategy_rows.h"

namespace hisparse::sim {

namespace {

// The per-length figures of the V4 budget at one length.
SeqLenBudget dsv4_at(const StrategyContext& c, int64_t tokens) {
  return dsv4_memory_budget(c.s, {tokens}).per_seq_len.front();
}

}  // namespace

double dsv4_hisparse_pcie_bytes(const StrategyContext& c, const PlanRow& hr) {
  return hr.misses_per_request_step * c.row + static_cast<double>(c.b.c4_layers) * c.row / 4.0;
}

int64_t dsv4_eviction_memory(const StrategyContext& c, int64_t kept, StrategyRow& e, std::string* formula) {
  e.hbm_per_request = dsv4_at(c, kept).full_kv_bytes.value;
  const Dsv4RequestLimits lim = dsv4_request_limits(c.b, kept, false);
  *formula = lim.hbm_formula;
  return lim.hbm;
}

double dsv4_compressed_request_bytes(const StrategyContext& c, int64_t tokens) {
  const SeqLenBudget q = dsv4_at(c, tokens);
  const int64_t entries = round_up_to_page(tokens, c.page) / 4;
  const int64_t full_precision = std::min(entries, (c.opt.compression_sinks + c.opt.compression_recent + 3) / 4);
  const double saved = static_cast<double>(entries - full_precision) * c.b.c4_layers * c.row *
                       (1.0 - 1.0 / c.opt.compression_ratio);
  return q.full_kv_bytes.value - saved;
}

std::string dsv4_strategy_note(const StrategyContext& c) {
  return fmt::format(
      "DeepSeek-V4: eviction budget E = {} tokens ({}); eviction keeps min(n, E) tokens in every pool (window, C4 "
      "entries and their indexer keys, C128 entries), HiSparse offloads the C4 entries (PCIe: misses + the newest C4 "
      "entry's backup, c4_layers × row / 4 per step), compression compresses the C4 entries past the S + R tokens' "
      "only; attended and indexed rows count C4 entries (n / 4)",
      c.t.eviction_budget,
      c.opt.eviction_budget > 0 ? "--eviction-budget"
                                : fmt::format("default: top_k {} C4 entries × 4 tokens, what the C4 indexer selects", c.K));
}

}  // namespace hisparse::sim
