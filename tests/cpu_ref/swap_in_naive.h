// @brief A literal, slow transcription of docs/swap_in.md (std::set, fresh vectors) that the fast reference is
// compared with on random steps. Test-only.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

namespace hisparse::test {

struct NaiveStep {
  std::vector<int32_t> slot_of;
  std::vector<int64_t> load_host;
  std::vector<int32_t> load_slot;
  int64_t hits = 0, newest_hits = 0, misses = 0, selected = 0;
};

/// Valid input only. host_loc: token -> host row is `token` (identity).
inline NaiveStep naive_swap_in(std::vector<int32_t>& slot_token, std::vector<int32_t>& lru,
                               const std::vector<int32_t>& T, int32_t n) {
  const int32_t H = static_cast<int32_t>(slot_token.size());
  NaiveStep r;
  r.slot_of.assign(T.size(), -1);
  for (int32_t t : T) r.selected += t >= 0;
  if (n <= H) {
    for (size_t i = 0; i < T.size(); ++i) {
      r.slot_of[i] = T[i];
      if (T[i] == n - 1) ++r.newest_hits; else if (T[i] >= 0) ++r.hits;
    }
    return r;
  }
  std::set<int32_t> in_t(T.begin(), T.end());
  std::vector<bool> done(T.size(), false);
  for (size_t i = 0; i < T.size(); ++i) {
    if (T[i] == n - 1) { r.slot_of[i] = H; done[i] = true; ++r.newest_hits; }
    if (T[i] < 0) done[i] = true;
  }
  std::vector<int32_t> hits, evictable;
  for (int32_t s : lru) {
    if (in_t.count(slot_token[s]) && slot_token[s] >= 0) {
      hits.push_back(s);
      for (size_t i = 0; i < T.size(); ++i) {
        if (T[i] == slot_token[s] && !done[i]) { r.slot_of[i] = s; done[i] = true; ++r.hits; }
      }
    } else {
      evictable.push_back(s);
    }
  }
  size_t m = 0;
  for (size_t i = 0; i < T.size(); ++i) {
    if (done[i]) continue;
    const int32_t s = evictable[m++];
    r.slot_of[i] = s;
    slot_token[s] = T[i];
    r.load_host.push_back(T[i]);
    r.load_slot.push_back(s);
    ++r.misses;
  }
  std::vector<int32_t> next(evictable.begin() + static_cast<long>(m), evictable.end());
  next.insert(next.end(), evictable.begin(), evictable.begin() + static_cast<long>(m));
  next.insert(next.end(), hits.begin(), hits.end());
  lru = next;
  return r;
}

}  // namespace hisparse::test
