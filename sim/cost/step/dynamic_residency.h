// @brief Dynamic residency's steady state for the planner (SGLang's hisparse_dynamic.py, PRs #23935 / #30266): every
// request keeps its full KV in the device pool (`resident_backed`, backed up to the host one token a step) until the
// pool runs short; then resident requests are demoted to HiSparse's device buffer (`swap`), the longest first, until
// the allocation fits. A demoted request is never promoted back. The serving engine runs the same rules request by
// request (sim/serving/residency.cpp); this is their closed form for B equal-mix requests per rank.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost/step/context_mix.h"

namespace hisparse::sim {

/// Device-pool units of one request of `n` tokens. Resident: its whole KV in pages; swap: the buffer (the whole
/// request while it fits H, else H + one page for the newest token, docs/capacity.md). `tokens_per_entry` 1 counts
/// tokens; DeepSeek-V4 passes 4: its device pool counts C4 entries (paged(n) / 4 resident, H + page / 4 in swap,
/// core/dsv4_pool_budget.h's c4_slots), H then in entries.
int64_t resident_device_tokens(int64_t n, int64_t page, int tokens_per_entry = 1);
int64_t swap_device_tokens(int64_t n, int64_t H, int64_t page, int tokens_per_entry = 1);

/// Per class of `mix` (index-aligned), the share of its requests in swap mode when `swap_fraction` of the batch is:
/// the longest classes first (demote_until_hisparse_available sorts its candidates by kv_allocated_len, descending).
std::vector<double> swap_share_by_class(const ContextMix& mix, double swap_fraction);

/// Requests in swap mode when B requests of `mix` share a rank's device pool of `pool_tokens`: the fewest, longest
/// first, whose demotion lets every request's pages fit; whole requests (any shortfall demotes one), at most B.
int64_t steady_swap_requests(int64_t B, const ContextMix& mix, int64_t pool_tokens, int64_t H, int64_t page,
                             int tokens_per_entry = 1);

/// The largest B in [0, cap] whose requests all stay resident (the resident graph runs).
int64_t max_resident_batch(const ContextMix& mix, int64_t pool_tokens, int64_t H, int64_t page, int64_t cap,
                           int tokens_per_entry = 1);

}  // namespace hisparse::sim
