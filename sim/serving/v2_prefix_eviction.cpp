// @brief V2PrefixEviction (see v2_prefix_eviction.h): the staged prefixes of one rank and their leaf-first eviction.
#include "sim/serving/v2_prefix_eviction.h"

#include <algorithm>
#include <vector>

#include "core/hisparse_v2.h"

namespace hisparse::sim::serving {

void V2PrefixEviction::keep(int64_t owner, int32_t E, int64_t base) {
  reqs_[owner] = Prefix{E, E, base, next_order_++};
}

int32_t V2PrefixEviction::prefix_end(int64_t owner) const {
  const auto it = reqs_.find(owner);
  return it == reqs_.end() ? 0 : it->second.E;
}

int32_t V2PrefixEviction::evicted_begin(int64_t owner) const {
  const auto it = reqs_.find(owner);
  return it == reqs_.end() ? 0 : it->second.B;
}

int64_t V2PrefixEviction::device_rows(int64_t owner) const {
  const auto it = reqs_.find(owner);
  return it == reqs_.end() ? 0 : it->second.base + paged(it->second.B);
}

int64_t V2PrefixEviction::evictable() const {
  int64_t e = 0;
  for (const auto& [owner, p] : reqs_) e += paged(p.B);
  return e;
}

int64_t V2PrefixEviction::evict(int64_t need, RankPools& pools) {
  std::vector<std::pair<int64_t, int64_t>> by_order;  // (order, owner): the oldest staged prefix first
  for (const auto& [owner, p] : reqs_) by_order.emplace_back(p.order, owner);
  std::sort(by_order.begin(), by_order.end());
  int64_t freed = 0;
  for (const auto& [order, owner] : by_order) {
    if (freed >= need) break;
    Prefix& p = reqs_[owner];
    if (p.B <= 0) continue;
    // The demand on this prefix counts what it already gave (as plan_v2_session's evict does): the rule returns the
    // begin of the whole evicted tail.
    const auto demand = static_cast<int32_t>(std::min<int64_t>(p.E, (p.E - p.B) + (need - freed)));
    const int32_t begin = v2_evicted_begin(p.E, node_tokens_, demand, V2Coordinator::kCurrent);
    if (begin >= p.B) continue;
    freed += paged(p.B) - paged(begin);
    ++counts_.evictions;
    counts_.evicted_tokens += p.B - begin;
    p.B = begin;
    pools.shrink_pool(1, owner, p.base + paged(p.B));
  }
  return freed;
}

void V2PrefixEviction::release(int64_t owner) {
  const auto it = reqs_.find(owner);
  if (it == reqs_.end()) return;
  ++counts_.released;
  if (it->second.E > 0)
    counts_.evicted_share_sum += static_cast<double>(it->second.E - it->second.B) / it->second.E;
  reqs_.erase(it);
}

}  // namespace hisparse::sim::serving
