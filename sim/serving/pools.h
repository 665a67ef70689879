// @brief RankPools: one dp rank's KV pools as the project's SGLang allocators (cpu_ref/memory) hold them, driving
// admission: the logical pool (req_to_token indices), the device pool (HiSparse: hot rows; full KV: the one pool)
// and the host pool's pages. Every allocation is whole pages (page rounding per request, as the real allocators),
// owned by the request, freed by it; a failed allocation changes nothing (OutOfMemoryError is caught here).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu_ref/memory/paged_allocator.h"
#include "sim/capacity/admission_pools.h"

namespace hisparse::sim {

/// Pool sizes of one rank, tokens (docs/capacity.md: device and logical pools, host pool; full KV: one pool).
struct PoolSizes {
  int64_t logical = 0, device = 0, host = 0;  // host 0 = no host pool (full KV)
  int64_t page = 64;
  Dsv4Pools dsv4;  // DeepSeek-V4's window, C128, indexer and state pools (sim/capacity/admission_pools.h); 0 = none
};

/// The owner of the radix prefix cache's pages on a rank (sim/serving/prefix/rank_prefix_cache.h): not a request
/// (requests own their ids, far below; cpu_ref's allocators take owners >= 0 and keep -1 and -2 for themselves).
inline constexpr int64_t kPrefixCacheOwner = INT64_MAX;

/// Tokens of each pool one request holds.
struct PoolNeed {
  int64_t logical = 0, device = 0, host = 0;  // page multiples
  Dsv4Pools dsv4;  // DeepSeek-V4: what the request holds in each of those pools for its life
};

class RankPools {
 public:
  explicit RankPools(const PoolSizes& sizes);

  const PoolSizes& sizes() const { return sizes_; }
  /// Whether `need` fits the free pages now (host only when `check_host`).
  bool fits(const PoolNeed& need, bool check_host) const;
  /// Takes the pages of `need` for request `owner`, all or nothing; false when one pool is short.
  bool take(int64_t owner, const PoolNeed& need);
  /// Grows the request's host pages to cover `tokens` (rounded up to pages, as SGLang's alloc_paged_token_slots);
  /// returns the pages it could not get (0 = done, nothing taken otherwise).
  int64_t grow_host(int64_t owner, int64_t tokens) { return grow(2, owner, tokens); }
  /// The same for the logical pool (full KV's one pool: a request's KV grows a page at a time past its reservation).
  int64_t grow_logical(int64_t owner, int64_t tokens) { return grow(0, owner, tokens); }
  /// The same for the device pool (dynamic residency: a resident request's KV grows past its buffer).
  int64_t grow_device(int64_t owner, int64_t tokens) { return grow(1, owner, tokens); }
  /// `--admission v2` (one home per token): grows the request's homes to cover `tokens`, host pages first and device
  /// pages for the rest (tokens that stay on the device, read there by the swap-in); returns the pages neither pool
  /// had (0 = done, nothing taken otherwise).
  int64_t grow_home(int64_t owner, int64_t tokens);
  /// Shrinks the request's device pages to `tokens` (a page multiple): staging done, the buffer stays.
  void shrink_device(int64_t owner, int64_t tokens);
  /// An owner that holds nothing yet (the prefix cache, whose pages come and go with its tree).
  void add_owner(int64_t owner);
  /// Grows `owner`'s pages of pool `pool` (0 logical, 1 device, 2 host) to cover `tokens`; returns the pages it could
  /// not get (0 = done, nothing taken otherwise). shrink_pool frees its pages past `tokens` (a page multiple).
  int64_t grow_pool(int pool, int64_t owner, int64_t tokens) { return grow(pool, owner, tokens); }
  void shrink_pool(int pool, int64_t owner, int64_t tokens);
  /// Frees everything the request holds in every pool.
  void release(int64_t owner);

  int64_t held(int64_t owner, int pool) const;  // pool: 0 logical, 1 device, 2 host, 3 device homes (v2); tokens
  int64_t free_tokens(int pool) const;
  int64_t owners() const;  // requests holding pages (the prefix cache is not counted)

 private:
  struct Held {
    int64_t owner = -1;
    std::vector<int64_t> pages[4];  // 3: device pages homing tokens (v2), taken from the device pool
  };
  cpu_ref::PagedTokenToKVPoolAllocator* pool(int k) const { return pools_[k == 3 ? 1 : k].get(); }
  Held* find(int64_t owner);
  const Held* find(int64_t owner) const;
  int64_t grow(int k, int64_t owner, int64_t tokens);
  bool alloc_pages(int k, int64_t owner, int64_t tokens, std::vector<int64_t>* pages);
  void free_pages(int k, int64_t owner, std::vector<int64_t>& pages, size_t keep);

  PoolSizes sizes_;
  std::unique_ptr<cpu_ref::PagedTokenToKVPoolAllocator> pools_[3];
  std::vector<Held> held_;   // few live requests per rank: a linear search is cheaper than a map
  std::unique_ptr<Dsv4PoolLedger> dsv4_;  // DeepSeek-V4 only: taken and freed with the token pools
};

}  // namespace hisparse::sim
