// @brief Dynamic residency's steady state: how many of a rank's requests are demoted to swap mode (see
// dynamic_residency.h).
#include "sim/cost/step/dynamic_residency.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hisparse::sim {

namespace {
int64_t paged(int64_t t, int64_t page) { return (t + page - 1) / page * page; }

/// Class indices of `mix`, longest first (ties: in the mix's order).
std::vector<size_t> longest_first(const ContextMix& mix) {
  std::vector<size_t> order(mix.classes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return mix.classes[a].seq_len > mix.classes[b].seq_len; });
  return order;
}
}  // namespace

int64_t resident_device_tokens(int64_t n, int64_t page, int c) { return paged(n, page) / c; }

int64_t swap_device_tokens(int64_t n, int64_t H, int64_t page, int c) {
  return n / c <= H ? paged(n, page) / c : H + page / c;
}

std::vector<double> swap_share_by_class(const ContextMix& mix, double swap_fraction) {
  std::vector<double> share(mix.classes.size(), 0.0);
  double left = std::clamp(swap_fraction, 0.0, 1.0);
  for (size_t c : longest_first(mix)) {
    const double w = mix.classes[c].weight;
    if (!(left > 0) || !(w > 0)) continue;
    const double take = std::min(w, left);
    share[c] = take / w;
    left -= take;
  }
  return share;
}

int64_t steady_swap_requests(int64_t B, const ContextMix& mix, int64_t pool_tokens, int64_t H, int64_t page, int tpe) {
  if (B <= 0) return 0;
  const double Bd = static_cast<double>(B);
  double excess = Bd * mix.expect([&](int64_t n) { return static_cast<double>(resident_device_tokens(n, page, tpe)); }) -
                  static_cast<double>(pool_tokens);
  if (!(excess > 0)) return 0;
  // Demote the longest class's requests first; each frees its KV beyond the buffer.
  double demoted = 0;
  for (size_t c : longest_first(mix)) {
    const int64_t n = mix.classes[c].seq_len;
    const double saving = static_cast<double>(resident_device_tokens(n, page, tpe) - swap_device_tokens(n, H, page, tpe));
    const double requests = Bd * mix.classes[c].weight;
    if (!(saving > 0) || !(requests > 0)) continue;
    const double needed = excess / saving;
    if (needed <= requests) { demoted += needed; excess = 0; break; }
    demoted += requests;
    excess -= requests * saving;
  }
  // Still short with every request demoted: all of them are in swap mode (admission bounds B by the buffers).
  if (excess > 0) return B;
  return std::min<int64_t>(B, static_cast<int64_t>(std::ceil(demoted - 1e-9)));
}

int64_t max_resident_batch(const ContextMix& mix, int64_t pool_tokens, int64_t H, int64_t page, int64_t cap, int tpe) {
  // Resident tokens grow with B, so the all-resident batches form a prefix.
  int64_t lo = 0, hi = std::max<int64_t>(0, cap);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (steady_swap_requests(mid, mix, pool_tokens, H, page, tpe) == 0) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace hisparse::sim
