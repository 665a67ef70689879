// @brief Reference top-k: the K best (score key, then smaller position) of each row, returned by ascending position.
#include "cpu_ref/topk.h"

#include <algorithm>
#include <vector>

namespace hisparse::cpu_ref {

void topk(const TopkArgs& a) {
  check_topk_args(a);
  if (a.rows == 0) return;
  check_topk_lengths(a);
  std::vector<uint64_t> rank;  // (key << 32) | ~position: unique per position, larger = better
  for (int32_t r = 0; r < a.rows; ++r) {
    const float* s = a.scores + int64_t(r) * a.stride;
    int32_t* out = a.out + int64_t(r) * a.k;
    const int32_t n = a.length[r];
    if (n <= a.k) {
      for (int32_t i = 0; i < a.k; ++i) out[i] = i < n ? i : -1;
      continue;
    }
    rank.resize(size_t(n));
    for (int32_t i = 0; i < n; ++i) rank[i] = (uint64_t(num::topk_key(s[i])) << 32) | uint64_t(~uint32_t(i));
    std::nth_element(rank.begin(), rank.begin() + (a.k - 1), rank.end(), std::greater<uint64_t>());
    for (int32_t i = 0; i < a.k; ++i) out[i] = int32_t(~uint32_t(rank[i] & 0xffffffffu));
    std::sort(out, out + a.k);
  }
}

}  // namespace hisparse::cpu_ref
