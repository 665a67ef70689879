// @brief A rank's prefix cache over its pool (rank_prefix_cache.h).
#include "sim/serving/prefix/rank_prefix_cache.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

namespace {
std::vector<RadixCache::Key> first_pages(const std::vector<RadixCache::Key>& keys, int64_t max_pages) {
  const auto n = static_cast<size_t>(std::clamp<int64_t>(max_pages, 0, static_cast<int64_t>(keys.size())));
  return std::vector<RadixCache::Key>(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
}
}  // namespace

RankPrefixCache::RankPrefixCache(RankPools& pools, int pool, int64_t page_tokens)
    : pools_(pools), pool_(pool), page_(page_tokens), tree_(page_tokens) {
  if (pool != 0 && pool != 2)
    throw_error("prefix cache: pool {} (expected 0, the KV pool of full KV, or 2, HiSparse's host pool)", pool);
  if (page_tokens != pools.sizes().page)
    throw_error("prefix cache: page of {} tokens, the rank's pools page {} tokens", page_tokens, pools.sizes().page);
  pools_.add_owner(kPrefixCacheOwner);
}

RankPrefixCache::Offer RankPrefixCache::offer(const std::vector<RadixCache::Key>& keys, int64_t max_pages) const {
  const RadixCache::Peek p = tree_.peek(first_pages(keys, max_pages));
  // Locking the match takes its unlocked pages out of the evictable ones; every other unlocked page can be freed.
  return Offer{p.pages * page_, (tree_.evictable_pages() - p.unlocked) * page_};
}

RankPrefixCache::Hold RankPrefixCache::acquire(const std::vector<RadixCache::Key>& keys, int64_t max_pages,
                                               SimTime now) {
  const RadixCache::Match m = tree_.match(first_pages(keys, max_pages), now);
  tree_.lock(m.last);
  return Hold{m.last, m.pages * page_};
}

RankPrefixCache::Hold RankPrefixCache::cache_prompt(const Hold& hold, const std::vector<RadixCache::Key>& keys,
                                                    int64_t owner, SimTime now) {
  const int64_t added = static_cast<int64_t>(keys.size()) - tree_.peek(keys).pages;
  const int64_t own = pools_.held(owner, pool_);
  if (keys.empty() || own < added * page_) return hold;
  account(now);
  tree_.insert(keys, now);
  inserted_pages_ += added;
  const RadixCache::Match m = tree_.match(keys, now);
  tree_.lock(m.last);
  tree_.unlock(hold.node);
  pools_.shrink_pool(pool_, owner, own - added * page_);  // those pages are the cache's now
  sync();
  return Hold{m.last, m.pages * page_};
}

void RankPrefixCache::release(const Hold& hold, const std::vector<RadixCache::Key>* insert, SimTime now) {
  account(now);
  if (insert && !insert->empty()) {
    const int64_t before = tree_.total_pages();
    tree_.insert(*insert, now);
    inserted_pages_ += tree_.total_pages() - before;
    // The new pages need room in the pool: older unlocked leaves go first (the request's own path is still locked);
    // the new leaf is the most recently used, so it goes only when nothing else can.
    const int64_t held = pools_.held(kPrefixCacheOwner, pool_) / page_;
    const int64_t short_pages = tree_.total_pages() - held - pools_.free_tokens(pool_) / page_;
    if (short_pages > 0) evicted_pages_ += tree_.evict(short_pages);
  }
  tree_.unlock(hold.node);
  sync();
}

bool RankPrefixCache::make_room(int64_t tokens, SimTime now) {
  const int64_t free = pools_.free_tokens(pool_);
  if (free >= tokens) return true;
  account(now);
  evict((tokens - free + page_ - 1) / page_, now);
  return pools_.free_tokens(pool_) >= tokens;
}

int64_t RankPrefixCache::evict(int64_t pages, SimTime now) {
  account(now);
  const int64_t freed = tree_.evict(pages);
  evicted_pages_ += freed;
  sync();
  return freed;
}

double RankPrefixCache::page_ns(SimTime now) const {
  return page_ns_ + static_cast<double>(tree_.total_pages()) * static_cast<double>(now - last_);
}

void RankPrefixCache::account(SimTime now) {
  page_ns_ += static_cast<double>(tree_.total_pages()) * static_cast<double>(now - last_);
  last_ = now;
}

void RankPrefixCache::sync() {
  const int64_t want = tree_.total_pages() * page_;
  const int64_t held = pools_.held(kPrefixCacheOwner, pool_);
  if (want < held) pools_.shrink_pool(pool_, kPrefixCacheOwner, want);
  if (want > held && pools_.grow_pool(pool_, kPrefixCacheOwner, want) != 0)
    throw_error("prefix cache: the pool refused {} pages the cache counted free", (want - held) / page_);
  peak_pages_ = std::max(peak_pages_, tree_.total_pages());
}

}  // namespace hisparse::sim
