// @brief RankPools over cpu_ref's PagedTokenToKVPoolAllocator (see pools.h).
#include "sim/serving/pools.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::sim {

RankPools::RankPools(const PoolSizes& s) : sizes_(s) {
  const int64_t sz[3] = {s.logical, s.device, s.host};
  for (int k = 0; k < 3; ++k)
    if (sz[k] > 0) pools_[k] = std::make_unique<cpu_ref::PagedTokenToKVPoolAllocator>(sz[k], s.page, /*need_sort=*/false);
  if (s.dsv4.any()) dsv4_ = std::make_unique<Dsv4PoolLedger>(s.dsv4);
}

RankPools::Held* RankPools::find(int64_t owner) {
  for (auto& h : held_)
    if (h.owner == owner) return &h;
  return nullptr;
}
const RankPools::Held* RankPools::find(int64_t owner) const {
  for (const auto& h : held_)
    if (h.owner == owner) return &h;
  return nullptr;
}

int64_t RankPools::free_tokens(int k) const { return pool(k) ? pool(k)->available_size() : 0; }
int64_t RankPools::owners() const {
  return std::count_if(held_.begin(), held_.end(), [](const Held& h) { return h.owner != kPrefixCacheOwner; });
}

void RankPools::add_owner(int64_t owner) {
  if (find(owner)) throw_error("serving pools: owner {} already holds pages on this rank", owner);
  Held h;
  h.owner = owner;
  held_.push_back(std::move(h));
}

int64_t RankPools::held(int64_t owner, int k) const {
  const Held* h = find(owner);
  return h ? static_cast<int64_t>(h->pages[k].size()) * sizes_.page : 0;
}

bool RankPools::fits(const PoolNeed& n, bool check_host) const {
  const int64_t need[3] = {n.logical, n.device, check_host ? n.host : 0};
  for (int k = 0; k < 3; ++k)
    if (need[k] > 0 && (!pool(k) || need[k] > pool(k)->available_size())) return false;
  return !dsv4_ || dsv4_->short_pool(n.dsv4) < 0;
}

bool RankPools::alloc_pages(int k, int64_t owner, int64_t tokens, std::vector<int64_t>* pages) {
  if (tokens <= 0) return true;
  if (!pool(k)) return false;
  try {
    const std::vector<int64_t> idx = pool(k)->alloc(tokens, owner);
    for (size_t i = 0; i < idx.size(); i += static_cast<size_t>(sizes_.page)) pages->push_back(idx[i] / sizes_.page);
    return true;
  } catch (const cpu_ref::OutOfMemoryError&) {
    return false;  // nothing was taken
  }
}

void RankPools::free_pages(int k, int64_t owner, std::vector<int64_t>& pages, size_t keep) {
  if (pages.size() <= keep) return;
  std::vector<int64_t> idx;
  idx.reserve((pages.size() - keep) * static_cast<size_t>(sizes_.page));
  for (size_t p = keep; p < pages.size(); ++p)
    for (int64_t t = 0; t < sizes_.page; ++t) idx.push_back(pages[p] * sizes_.page + t);
  pool(k)->free(idx, owner);
  pages.resize(keep);
}

bool RankPools::take(int64_t owner, const PoolNeed& n) {
  if (find(owner)) throw_error("serving pools: request {} already holds pages on this rank", owner);
  if (dsv4_ && dsv4_->short_pool(n.dsv4) >= 0) return false;
  Held h;
  h.owner = owner;
  const int64_t need[3] = {n.logical, n.device, n.host};
  for (int k = 0; k < 3; ++k)
    if (!alloc_pages(k, owner, need[k], &h.pages[k])) {
      for (int j = 0; j < k; ++j) free_pages(j, owner, h.pages[j], 0);
      return false;
    }
  held_.push_back(std::move(h));
  if (dsv4_) dsv4_->take(owner, n.dsv4);
  return true;
}

int64_t RankPools::grow(int k, int64_t owner, int64_t tokens) {
  Held* h = find(owner);
  if (!h) throw_error("serving pools: request {} holds nothing on this rank", owner);
  const int64_t want = (tokens + sizes_.page - 1) / sizes_.page;
  const int64_t have = static_cast<int64_t>(h->pages[k].size());
  if (want <= have) return 0;
  return alloc_pages(k, owner, (want - have) * sizes_.page, &h->pages[k]) ? 0 : want - have;
}

int64_t RankPools::grow_home(int64_t owner, int64_t tokens) {
  Held* h = find(owner);
  if (!h) throw_error("serving pools: request {} holds nothing on this rank", owner);
  const int64_t want = (tokens + sizes_.page - 1) / sizes_.page;
  const int64_t have = static_cast<int64_t>(h->pages[2].size() + h->pages[3].size());
  if (want <= have) return 0;
  const int64_t need = want - have;
  const int64_t host_free = free_tokens(2) / sizes_.page, device_free = free_tokens(1) / sizes_.page;
  if (host_free + device_free < need) return need - host_free - device_free;
  const int64_t on_host = std::min(need, host_free);
  if (!alloc_pages(2, owner, on_host * sizes_.page, &h->pages[2]) ||
      !alloc_pages(3, owner, (need - on_host) * sizes_.page, &h->pages[3]))
    throw_error("serving pools: request {} was promised {} free pages but the allocators refused them", owner, need);
  return 0;
}

void RankPools::shrink_device(int64_t owner, int64_t tokens) { shrink_pool(1, owner, tokens); }

void RankPools::shrink_pool(int k, int64_t owner, int64_t tokens) {
  Held* h = find(owner);
  if (!h) throw_error("serving pools: request {} holds nothing on this rank", owner);
  free_pages(k, owner, h->pages[k], static_cast<size_t>((tokens + sizes_.page - 1) / sizes_.page));
}

void RankPools::release(int64_t owner) {
  for (size_t i = 0; i < held_.size(); ++i)
    if (held_[i].owner == owner) {
      for (int k = 0; k < 4; ++k) free_pages(k, owner, held_[i].pages[k], 0);
      if (dsv4_) dsv4_->release(owner);
      held_[i] = std::move(held_.back());
      held_.pop_back();
      return;
    }
  throw_error("serving pools: request {} holds nothing on this rank", owner);
}

}  // namespace hisparse::sim
