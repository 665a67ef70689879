// @brief The prefix cache replayed over a workload's prompts (prefix_replay.h).
#include "sim/serving/prefix/prefix_replay.h"

#include <algorithm>

#include "core/error.h"
#include "sim/serving/prefix/prefix_pages.h"
#include "sim/serving/prefix/radix_cache.h"

namespace hisparse::sim {

PrefixReplayResult replay_prefix_cache(const Workload& w, const PrefixReplayOptions& o) {
  if (o.capacity_pages < 0) throw_error("prefix cache: capacity of {} pages: expected >= 0", o.capacity_pages);
  RadixCache cache(o.page_tokens);
  PrefixReplayResult r;
  for (const RequestSpec& q : w.requests) {
    const std::vector<RadixCache::Key> keys = prompt_pages(q, w.block_tokens, o.page_tokens);
    ++r.requests;
    r.input_tokens += q.input_tokens;
    r.hit_tokens += cache.match(keys, q.arrival).pages * o.page_tokens;
    cache.insert(keys, q.arrival);
    if (o.capacity_pages > 0 && cache.total_pages() > o.capacity_pages)
      r.evicted_pages += cache.evict(cache.total_pages() - o.capacity_pages);
    r.peak_pages = std::max(r.peak_pages, cache.total_pages());
  }
  return r;
}

}  // namespace hisparse::sim
