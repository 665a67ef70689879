// @brief One dp rank's radix prefix cache inside `simulate`, as an entity: the tree (radix_cache.h) and the pages it
// holds in one of the rank's pools (sim/serving/pools.h, owner kPrefixCacheOwner), kept equal at every change, so the
// bytes the cache holds count against that pool. Full KV: the KV pool (SGLang's RadixCache keeps a finished request's
// KV indices in the one token pool); HiSparse: the host pool, which holds every token of a request (the device buffer
// is per request and is not cached).
//
// The request's life, after SGLang's scheduler (sgl-project/sglang fd3907ee, python/sglang/srt/managers/
// schedule_batch.py Req.init_next_round_input / _compute_max_prefix_len, schedule_policy.py PrefillAdder, and
// mem_cache/radix_cache.py at 006b0e3d match_prefix / inc_lock_ref / dec_lock_ref / cache_finished_req / evict; lines
// are not cited: the stored corpus returns these files without line numbers):
// - admission matches the prompt's pages, at most input − 1 tokens (the last prompt token is always computed, for its
//   logits), locks the matched nodes (inc_lock_ref) and takes pages only for the rest;
// - a pool that needs room first evicts unlocked leaves, least recently used first (evict before alloc);
// - once its prompt's KV is complete (prefill ended, or its transfer arrived) the prompt pages are inserted and the
//   request's lock moves to their end (cache_unfinished_req, which the scheduler calls after a prefill batch for the
//   requests that go on decoding): later requests share them while it decodes; its pages new to the tree become the
//   cache's;
// - at finish the request's prompt pages are inserted (cache_finished_req: its duplicate pages are freed, its new ones
//   stay as the cache's) and its match unlocked (dec_lock_ref); an aborted or retracted request only unlocks.
// - at finish SGLang inserts the answer's KV too (prompt + output − 1 tokens); here that happens where the workload
//   keys the answer (RequestSpec::sequence_blocks: the session generators, and the Mooncake sessions derived from a
//   trace). A plain trace names prompt blocks only, so a later turn hits the earlier prompts but not their answers
//   there: a lower bound on SGLang's hits.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/sim_time.h"
#include "sim/serving/pools.h"
#include "sim/serving/prefix/radix_cache.h"

namespace hisparse::sim {

class RankPrefixCache {
 public:
  /// A running request's hold on its matched prefix: the node locked and the tokens it covers.
  struct Hold {
    RadixCache::Node* node = nullptr;
    int64_t tokens = 0;
  };

  /// The cache's pages live in `pool` of `pools` (0 logical / full KV, 2 host); `pools` outlives the cache.
  RankPrefixCache(RankPools& pools, int pool, int64_t page_tokens);
  RankPrefixCache(const RankPrefixCache&) = delete;
  RankPrefixCache& operator=(const RankPrefixCache&) = delete;

  int pool() const { return pool_; }
  /// What admission would match of `keys` (its first `max_pages` pages), without touching the tree: the hit in tokens
  /// and the tokens of pool room the cache could still free once that match is locked.
  struct Offer {
    int64_t hit_tokens = 0, reclaimable_tokens = 0;
  };
  Offer offer(const std::vector<RadixCache::Key>& keys, int64_t max_pages) const;
  /// Matches and locks the first `max_pages` pages of `keys` for an admitted request.
  Hold acquire(const std::vector<RadixCache::Key>& keys, int64_t max_pages, SimTime now);
  /// The request `owner`'s prompt KV is complete: its pages `keys` are inserted, the hold moves to their end, and the
  /// pages new to the tree move from the owner's pages of the pool to the cache's. Returns the new hold; the old one
  /// unchanged when the owner holds fewer pages of the pool than the tree lacks (its KV is not in this pool yet).
  Hold cache_prompt(const Hold& hold, const std::vector<RadixCache::Key>& keys, int64_t owner, SimTime now);
  /// The request leaves: with `insert`, its prompt pages are inserted first (evicting older leaves where the pool has
  /// no room for them; its own unlocked new leaf last of all), then its hold is unlocked.
  void release(const Hold& hold, const std::vector<RadixCache::Key>* insert, SimTime now);
  /// Evicts unlocked leaves, least recently used first, until the pool has `tokens` free or nothing is evictable;
  /// whether it has them.
  bool make_room(int64_t tokens, SimTime now);
  /// Evicts at least `pages` pages (or all that are evictable); the pages freed.
  int64_t evict(int64_t pages, SimTime now);

  int64_t pages() const { return tree_.total_pages(); }
  int64_t evictable_pages() const { return tree_.evictable_pages(); }
  int64_t peak_pages() const { return peak_pages_; }
  int64_t evicted_pages() const { return evicted_pages_; }
  int64_t inserted_pages() const { return inserted_pages_; }
  /// Σ pages × ns held, up to `now`: the time-weighted mean is this over the run's length.
  double page_ns(SimTime now) const;

 private:
  void account(SimTime now);  // closes the interval since the last change at the current page count
  void sync();                // the pool's pages follow the tree's

  RankPools& pools_;
  int pool_;
  int64_t page_;
  RadixCache tree_;
  int64_t peak_pages_ = 0, evicted_pages_ = 0, inserted_pages_ = 0;
  double page_ns_ = 0;
  SimTime last_ = 0;
};

}  // namespace hisparse::sim
