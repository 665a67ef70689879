// @brief The ranks' radix prefix caches in the serving engine (sim/serving/prefix/rank_prefix_cache.h has the rules
// and their SGLang sources): which pool holds them, what admission asks once a prefix matched, eviction when a pool
// needs room, the insert at finish, and what the run reports.
//
// Default (sim/api/simulate_request.cpp): on where SGLang's scheduler has its radix cache, colocated servers
// (disable_radix_cache defaults to false); off on a PD decode server, which SGLang forces to a chunk cache unless
// --disaggregation-decode-enable-radix-cache, an option it refuses with --enable-hisparse (sgl-project/sglang
// 7a52cfef, python/sglang/srt/arg_groups/pd_disaggregation_hook.py:68-97, handle_pd_disaggregation). So PD +
// HiSparse with the cache on is refused here too; PD + full KV with it on matches on the decode rank, and the
// prefill instance computes and sends only the rest (the option's purpose: the decode side asks prefill only for
// what it lacks).
#include <algorithm>

#include "core/error.h"
#include "sim/serving/engine.h"
#include "sim/serving/prefix/prefix_pages.h"

namespace hisparse::sim::serving {

void Engine::enable_prefix_caches() {
  prefix_cache_ = opt_.prefix_cache && w_.block_tokens > 0;
  if (!prefix_cache_) return;
  if (hisparse_ && prefill_mode_ != PrefillMode::kColocated)
    throw_error("{}: --prefix-cache on with HiSparse on a PD decode server: SGLang refuses "
                "--disaggregation-decode-enable-radix-cache with --enable-hisparse (arg_groups/"
                "pd_disaggregation_hook.py); expected --prefix-cache off, --mode full or a colocated deployment",
                sc_.source);
  if (w_.block_tokens % page_ != 0)
    throw_error("workload {}: prefix blocks of {} tokens are not whole pages of {} (scenario {}); expected a page size "
                "that divides the block, or --prefix-cache off",
                w_.name, w_.block_tokens, page_, sc_.source);
  // Full KV: the one KV pool (logical); HiSparse (and dynamic residency): the host pool, which holds every token.
  for (Rank& g : ranks_) g.enable_prefix_cache(hisparse_ ? 2 : 0);
}

int64_t Engine::prefix_max_pages(int64_t i) const {
  // SGLang's _compute_max_prefix_len: at most input − 1 tokens (the last one is computed for its logits), whole pages.
  return std::max<int64_t>(0, prompt_tokens(i) - 1) / page_;
}

void Engine::prefix_room(const Rank& g, int64_t i, PoolNeed& room) const {
  const RankPrefixCache* cache = g.prefix_cache();
  if (!cache) return;
  const RankPrefixCache::Offer o = cache->offer(prefix_keys_[static_cast<size_t>(i)], prefix_max_pages(i));
  int64_t& need = cache->pool() == 0 ? room.logical : room.host;
  need = std::max<int64_t>(0, need - o.hit_tokens - o.reclaimable_tokens);
}

RankPrefixCache::Hold Engine::acquire_prefix(Rank& g, int64_t i, PoolNeed& need) {
  RankPrefixCache* cache = g.prefix_cache();
  if (!cache) return {};
  const RankPrefixCache::Hold hold = cache->acquire(prefix_keys_[static_cast<size_t>(i)], prefix_max_pages(i), sim_.now());
  int64_t& own = cache->pool() == 0 ? need.logical : need.host;
  own = std::max<int64_t>(0, own - hold.tokens);
  cache->make_room(own, sim_.now());  // evict before alloc (the match is locked: it stays)
  return hold;
}

void Engine::cache_prompt(Rank& g, int64_t i) {
  RankPrefixCache* cache = g.prefix_cache();
  if (!cache) return;
  RequestState& rt = rt_[static_cast<size_t>(i)];
  rt.move_prefix(cache->cache_prompt(rt.prefix(), prefix_keys_[static_cast<size_t>(i)], i, sim_.now()));
}

void Engine::release_prefix(Rank& g, int64_t i, bool insert) {
  RankPrefixCache* cache = g.prefix_cache();
  if (!cache) return;
  const RankPrefixCache::Hold& hold = rt_[static_cast<size_t>(i)].prefix();
  if (!insert) {
    cache->release(hold, nullptr, sim_.now());
    return;
  }
  // A finished request inserts what its KV holds: its prompt, and its answer where the workload keys it
  // (RequestSpec::sequence_blocks: a session's next turn resends it).
  const std::vector<RadixCache::Key> keys = spec(i).sequence_blocks.empty()
                                                ? prefix_keys_[static_cast<size_t>(i)]
                                                : finished_pages(spec(i), w_.block_tokens, page_);
  cache->release(hold, &keys, sim_.now());
}

int64_t Engine::evict_for_host(Rank& g, int64_t i, int64_t tokens) {
  // The request's own host pages cover what its cached prefix does not.
  const int64_t own = std::max<int64_t>(0, tokens - rt_[static_cast<size_t>(i)].cached());
  int64_t short_pages = admission_->land(g, i, own);
  RankPrefixCache* cache = g.prefix_cache();
  while (short_pages > 0 && cache && cache->pool() == 2 && cache->evictable_pages() > 0) {
    cache->evict(short_pages, sim_.now());
    short_pages = admission_->land(g, i, own);
  }
  return short_pages;
}

void Engine::report_prefix_cache(ServingResult& r) const {
  if (!prefix_cache_) return;
  r.prefix_cache = true;
  r.prefix_cache_pool = hisparse_ ? "host" : "kv";
  for (const RequestOutcome& o : r.requests)
    if (o.finish >= 0) {
      r.prefix_input_tokens += o.input_tokens;
      r.prefix_hit_tokens += o.cached_tokens;
    }
  double page_ns = 0;
  for (const Rank& g : ranks_) {
    const RankPrefixCache& c = *g.prefix_cache();
    r.prefix_inserted_pages += c.inserted_pages();
    r.prefix_evicted_pages += c.evicted_pages();
    r.prefix_peak_tokens_per_rank = std::max(r.prefix_peak_tokens_per_rank, c.peak_pages() * page_);
    page_ns += c.page_ns(sim_.now());
  }
  if (sim_.now() > 0 && !ranks_.empty())
    r.prefix_mean_tokens_per_rank = page_ns / static_cast<double>(sim_.now()) / static_cast<double>(ranks_.size()) * page_;
  // A cached token's bytes in its pool: HiSparse's host pool keeps the offloaded latent of every KV layer; the full-KV
  // pool also the indexer keys of the top-k layers (the KV the PD transfer carries).
  r.prefix_bytes_per_token = hisparse_ ? offload_bytes_per_token_ : kv_bytes_per_token_ + idx_bytes_per_token_;
}

}  // namespace hisparse::sim::serving
