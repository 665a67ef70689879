// @brief The pools a simulated server admits requests into, sized as the capacity model sizes them (the memory
// budget's SGLang pools): `hisparse simulate`'s engine (sim/serving/) reads its token pools from here, and DeepSeek-V4's
// other pools (sliding window, C128, C4 indexer, C4 compress states) with what one request holds in each.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_budget.h"

namespace hisparse::sim {

/// Tokens per dp rank. Full KV: `logical` is max_total_num_tokens and no device or host pool is kept apart.
/// HiSparse: the device pool, the logical pool (device × host_to_device_ratio) and the host pool.
struct AdmissionPools {
  int64_t logical = 0, device = 0, host = 0;
};

/// The pools of `budget` in the engine's tokens: DeepSeek-V4's device and host pools count C4 entries, each holding
/// `tokens_per_entry` (4) tokens; 1 for token pools.
AdmissionPools admission_pools(const MemoryBudget& budget, bool hisparse, int tokens_per_entry);

/// DeepSeek-V4's pools besides the logical (full) and C4 device / host pools, per dp rank, each in its own unit
/// (core/dsv4_pool_budget.h, SGLang's DSV4PoolConfigurator): the sliding-window pool (tokens), the C128 pool
/// (entries, full / 128), the C4 indexer-key pool (entries, full / 4: the keys of every logical token stay on the
/// GPU) and the C4 compress-state rows (floor(swa / window) × ring). Every other model: all 0, none enforced.
struct Dsv4Pools {
  static constexpr int kCount = 4;
  int64_t units[kCount] = {0, 0, 0, 0};  // swa, c128, indexer, c4_state
  static const char* name(int k);        // "swa_pool", "c128_pool", "c4_indexer_pool", "c4_state_rows"
  bool any() const { return units[0] > 0; }
};
/// The V4 pools of `scenario` with HiSparse on or off (the full pool and the SWA pool grow when HiSparse shrinks the
/// C4 device pool).
Dsv4Pools dsv4_admission_pools(const Scenario& scenario, bool hisparse);

/// What one request of `tokens` (prompt + output) holds in each V4 pool for its life: paged(min(n, window + page))
/// window tokens (SGLang frees what slides out of the window; this is the most it holds), ceil(paged(n) / 128) C128
/// entries, paged(n) / 4 indexer entries, and floor(window tokens / window) × ring state rows.
Dsv4Pools dsv4_request_need(const Scenario& scenario, int64_t tokens);

/// Integer bookkeeping of a rank's V4 pools: what each admitted request holds, all or nothing.
class Dsv4PoolLedger {
 public:
  explicit Dsv4PoolLedger(const Dsv4Pools& sizes) : sizes_(sizes) {}
  const Dsv4Pools& sizes() const { return sizes_; }
  /// The first pool (Dsv4Pools::name) that cannot hold `need` now, or -1 when every pool can.
  int short_pool(const Dsv4Pools& need) const;
  /// The first pool `need` exceeds even when empty (the request can never be admitted), or -1.
  int never_fits(const Dsv4Pools& need) const;
  /// Takes `need` for `owner` (throws when a pool is short: call short_pool first).
  void take(int64_t owner, const Dsv4Pools& need);
  /// Frees what `owner` holds (nothing when it holds nothing).
  void release(int64_t owner);
  int64_t used(int k) const { return used_[k]; }

 private:
  Dsv4Pools sizes_;
  int64_t used_[Dsv4Pools::kCount] = {0, 0, 0, 0};
  std::vector<std::pair<int64_t, Dsv4Pools>> held_;  // few live requests per rank: a linear search
};

}  // namespace hisparse::sim
