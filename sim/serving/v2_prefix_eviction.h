// @brief `--admission v2 --v2-coordinator current`: which part of each V2 request's tree-owned prefix [0, E) a rank
// still holds in device rows, and HiCache's eviction of those prefixes when the device pool is short (docs/swap_in.md,
// "Eviction per radix node, leaf first"; docs/cost_model.md, admission). The rule is core/hisparse_v2.h's
// v2_evicted_begin, the one cpu_ref's plan_v2_session calls (cpu_ref/memory/hisparse_v2_session.cpp, evict), called
// here the same way, not restated: the oldest staged prefix first (its radix nodes are the least recently used:
// decode does not touch tree nodes), each from its tail in whole nodes, so the head [0, B) stays on the device.
// Internal to sim/serving/.
#pragma once

#include <cstdint>
#include <map>

#include "sim/serving/pools.h"

namespace hisparse::sim::serving {

/// What eviction did on one rank over a run (reported under v2 current only).
struct V2EvictionCounts {
  int64_t evictions = 0;        // prefixes cut (one per request each time HiCache took nodes from it)
  int64_t evicted_tokens = 0;   // prefix tokens moved off the device
  int64_t released = 0;         // V2 requests that left the rank with a staged prefix
  double evicted_share_sum = 0; // sum over them of (E - B) / E at release
};

class V2PrefixEviction {
 public:
  /// `node_tokens`: the radix node length (a node per chunked-prefill chunk, the assumption of v2_evicted_begin);
  /// `page`: device rows are whole pages.
  V2PrefixEviction(int32_t node_tokens, int64_t page) : node_tokens_(node_tokens), page_(page) {}

  /// Request `owner` finished staging with its prefix [0, E) in device rows beside `base` device tokens (its buffer).
  void keep(int64_t owner, int32_t E, int64_t base);
  /// Whether `owner` has a staged prefix here.
  bool has(int64_t owner) const { return reqs_.count(owner) != 0; }
  /// The prefix end E and the evicted begin B of `owner` ([B, E) on the host only); both 0 when it has none.
  int32_t prefix_end(int64_t owner) const;
  int32_t evicted_begin(int64_t owner) const;
  /// Device tokens `owner` holds: its base plus its resident head [0, B), in whole pages.
  int64_t device_rows(int64_t owner) const;
  /// Device tokens eviction could free on this rank (every staged prefix's resident head, in pages).
  int64_t evictable() const;
  /// HiCache frees at least `need` device tokens (whole nodes, so possibly more), oldest staged prefix first, and
  /// shrinks each cut request's device pages in `pools`. Returns the tokens freed (less than `need` only when nothing
  /// is left to evict).
  int64_t evict(int64_t need, RankPools& pools);
  /// `owner` left the rank (finished, retracted, aborted): its share is counted, its entry dropped.
  void release(int64_t owner);
  const V2EvictionCounts& counts() const { return counts_; }

 private:
  struct Prefix {
    int32_t E = 0;
    int32_t B = 0;  // [B, E) evicted; B == E: nothing evicted yet
    int64_t base = 0;
    int64_t order = 0;
  };
  int64_t paged(int64_t t) const { return (t + page_ - 1) / page_ * page_; }

  int32_t node_tokens_;
  int64_t page_;
  int64_t next_order_ = 0;
  std::map<int64_t, Prefix> reqs_;
  V2EvictionCounts counts_;
};

}  // namespace hisparse::sim::serving
