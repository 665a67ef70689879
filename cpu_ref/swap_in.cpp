// @brief CPU reference of the swap-in contract (docs/swap_in.md), written as the replay hot path: O(K + H) time and
// memory per step whatever n is, no allocation once warm.
#include "cpu_ref/swap_in.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"

namespace hisparse::cpu_ref {

uint32_t SwapInScratch::begin(int32_t n, int32_t entries, int32_t H) {
  const int64_t span = int64_t{direct_span_} * (int64_t{std::max(entries, 0)} + std::max(H, 0));
  direct_ = n <= span;
  if (direct_) {
    const uint32_t need = static_cast<uint32_t>(std::max(n, 0));
    if (need > capacity_) {
      // Geometric growth (a request whose n rises by one per step re-allocates O(log n) times), within the span.
      capacity_ = static_cast<uint32_t>(std::min<int64_t>(std::max(need, capacity_ + capacity_ / 2), span));
      marks_.assign(static_cast<size_t>(capacity_) + 1, 0);  // epoch 0 is never a step's epoch
    }
  } else {
    const size_t max_entries = static_cast<size_t>(std::max(entries, 1));
    if (max_entries > filled_.size()) {
      // Grow-only: 2^b >= 4 x entries home cells (at least 16), room for every entry to probe past the last home
      // cell, and the two cells find() reads.
      size_t cells = 16;
      uint32_t bits = 4;
      while (cells < 4 * max_entries) {
        cells *= 2;
        ++bits;
      }
      cells_.assign(cells + max_entries + 2, HashedPositionTable::kEmpty);
      filled_.assign(max_entries, 0);
      shift_ = 32 - bits;
    } else {
      for (size_t f = 0; f < filled_count_; ++f) cells_[filled_[f]] = HashedPositionTable::kEmpty;
    }
    filled_count_ = 0;
  }
  if (hits.size() < static_cast<size_t>(H)) {
    hits.resize(H);
    evictable.resize(H);
    miss_entry.resize(H);
    victims.resize(H);
    slot_mark.resize(H, 0);
  }
  if (++epoch == 0) {
    // 2^32 steps on one scratch: old stamps could alias the new epoch, so forget them all once.
    std::fill(marks_.begin(), marks_.end(), 0);
    std::fill(slot_mark.begin(), slot_mark.end(), 0);
    epoch = 1;
  }
  return epoch;
}

size_t SwapInScratch::bytes() const {
  return (marks_.capacity() + cells_.capacity()) * sizeof(uint64_t) +
         (filled_.capacity() + slot_mark.capacity()) * sizeof(uint32_t) +
         (hits.capacity() + evictable.capacity() + miss_entry.capacity() + victims.capacity()) * sizeof(int32_t);
}

void init_swap_in_state(SwapInStateView state, InitialState initial) {
  for (int32_t i = 0; i < state.H; ++i) {
    state.lru[i] = i;
    state.slot_token[i] = initial == InitialState::kIdentity ? i : -1;
  }
}

int64_t host_row_or_throw(const int64_t* host_loc, int32_t token, const StepContext& where) {
  const int64_t row = host_loc ? host_loc[token] : token;
  if (row < 0) {
    throw_error("swap-in: token {} of request {}, layer {} has no host copy (step {}): a miss must load it from the "
                "host pool, whose host_loc is -1",
                token, where.request, where.layer, where.step);
  }
  return row;
}

namespace {

/// Where marking stopped: entry `at` is invalid (duplicate of entry `first`, or out of range when first < 0).
struct MarkResult {
  int32_t at = -1;  // -1: every entry marked
  int32_t first = -1;
  int64_t valid = 0;
  bool newest = false;
};

template <class Table>
MarkResult mark_entries(Table& table, const int32_t* selected, int32_t count, int32_t n, int32_t* slot_of) {
  MarkResult r;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t t = selected[i];
    // One unsigned compare covers both padding (-1) and out-of-range positions; both are rare on the hot path.
    if (static_cast<uint32_t>(t) >= static_cast<uint32_t>(n)) {
      if (t != -1) {
        r.at = i;
        return r;
      }
      slot_of[i] = -1;
      continue;
    }
    const int32_t first = table.mark(t, i);
    if (first >= 0) {
      r.at = i;
      r.first = first;
      return r;
    }
    slot_of[i] = kUnassigned;
    ++r.valid;
  }
  r.newest = table.contains(n - 1);
  return r;
}

}  // namespace

uint32_t validate_and_mark(const int32_t* selected, int32_t count, int32_t n, int32_t top_k, int32_t H,
                           const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) {
  if (H < top_k) {
    throw_error("swap-in: device_buffer_size H = {} must be >= top_k K = {} (request {}, layer {}, step {})", H, top_k,
                where.request, where.layer, where.step);
  }
  if (count < 0 || count > top_k) {
    throw_error("swap-in: request {}, layer {}, step {}: {} entries selected, expected at most top_k = {}",
                where.request, where.layer, where.step, count, top_k);
  }
  if (n < 1) {
    throw_error("swap-in: request {}, layer {}, step {}: sequence length {} must be >= 1", where.request, where.layer,
                where.step, n);
  }
  const uint32_t epoch = scratch.begin(n, top_k, H);
  plan.slot_of.resize(count);
  int32_t* slot_of = plan.slot_of.data();
  const MarkResult r = scratch.with_table([&](auto table) {
    const MarkResult m = mark_entries(table, selected, count, n, slot_of);
    if constexpr (std::is_same_v<decltype(table), HashedPositionTable>) scratch.set_filled(table.nfilled);
    return m;
  });
  if (r.at >= 0) {
    const int32_t t = selected[r.at];
    if (r.first >= 0) {
      throw_error("swap-in: request {}, layer {}, step {}: position {} is selected twice (entries {} and {})",
                  where.request, where.layer, where.step, t, r.first, r.at);
    }
    if (t >= n) {
      throw_error("swap-in: request {}, layer {}, step {}: position {} (entry {}) is >= sequence length {}",
                  where.request, where.layer, where.step, t, r.at, n);
    }
    throw_error("swap-in: request {}, layer {}, step {}: entry {} is {}, expected a position in [0, {}) or -1 "
                "(padding)",
                where.request, where.layer, where.step, r.at, t, n);
  }
  SwapInCounters& c = plan.counters;
  c = SwapInCounters{};
  c.selected = r.valid;
  c.newest_hits = r.newest ? 1 : 0;
  plan.load_host.clear();
  plan.load_slot.clear();
  return epoch;
}

namespace {

/// Step 2 of the slow path: partitions the LRU into EVICTABLE (front of `part`, LRU order) and HITS (back, reverse
/// LRU order), gives every hit entry its slot; returns EVICTABLE's length.
template <class Table>
int32_t partition_lru(const Table& table, const int32_t* lru, const int32_t* slot_token, int32_t H, int32_t newest,
                      int32_t* part, int32_t* slot_of) {
  // One pass partitions the LRU with a single store per slot (measured: extra stores here cost more than the
  // hit/evictable branch the compiler emits; hits come in long runs at the MRU end). EVICTABLE grows from the
  // front of one array and HITS from its back (reversed). A second, shorter pass over HITS gives each hit entry
  // its slot; the newest token's entry keeps slot H even if a slot holds that token.
  int32_t ne = 0;
  int32_t back = H - 1;
  for (int32_t j = 0; j < H; ++j) {
    const int32_t s = lru[j];
    const bool hit = table.contains(slot_token[s]);
    part[hit ? back : ne] = s;
    back -= hit;
    ne += !hit;
  }
  for (int32_t k = ne; k < H; ++k) {
    const int32_t s = part[k];
    const int32_t t = slot_token[s];
    if (t != newest) slot_of[table.entry_of(t)] = s;
  }
  return ne;
}

}  // namespace

void swap_in(SwapInStateView state, const int32_t* selected, int32_t count, int32_t n, int32_t top_k,
             const int64_t* host_loc, int64_t row_bytes, const StepContext& where, SwapInPlan& plan,
             SwapInScratch& scratch) {
  const int32_t H = state.H;
  validate_and_mark(selected, count, n, top_k, H, where, plan, scratch);
  SwapInCounters& c = plan.counters;
  int32_t* slot_of = plan.slot_of.data();

  if (n <= H) {
    // Fast path: while n <= H slot i still holds token i (identity growth), the newest token included.
    for (int32_t i = 0; i < count; ++i) slot_of[i] = selected[i];
    c.hits = c.selected - c.newest_hits;
    c.fast_path = true;
    return;
  }

  const int32_t newest = n - 1;
  // Walk the LRU once; hit/evictable is a table lookup (an empty slot's -1 is never marked). Slots never hold the
  // newest token unless n failed to grow between steps; such a slot follows the literal rule (its token is in T, so
  // it joins HITS) while the entry itself keeps the reserved slot H (step 1 of the contract).
  const int32_t* lru = state.lru;
  const int32_t* slot_token = state.slot_token;
  int32_t* evictable = scratch.evictable.data();
  int32_t* part = evictable;  // [0, ne) EVICTABLE; [ne, H) HITS in reverse LRU order
  const int32_t ne = scratch.with_table([&](auto table) {
    if (c.newest_hits) slot_of[table.entry_of(newest)] = H;
    return partition_lru(table, lru, slot_token, H, newest, part, slot_of);
  });
  const int32_t nh = H - ne;

  // Misses in increasing entry index take EVICTABLE in order. Check every host copy before touching state.
  int32_t* miss_entry = scratch.miss_entry.data();
  int32_t nm = 0;
  if (c.selected - c.newest_hits >= nh) {  // (nh may count one slot holding the newest token)
    // miss_entry has room for H >= K entries; the branch-free append keeps the ~15% misses from mispredicting.
    for (int32_t i = 0; i < count; ++i) {
      miss_entry[nm] = i;
      nm += slot_of[i] == kUnassigned;
    }
  }
  if (nm > ne) {
    throw_error("swap-in: request {}, layer {}, step {}: {} misses but only {} evictable slots; the buffer state is "
                "corrupt (a token held by two slots?)",
                where.request, where.layer, where.step, nm, ne);
  }
  plan.load_host.resize(nm);
  plan.load_slot.resize(nm);
  for (int32_t m = 0; m < nm; ++m) {
    const int32_t t = selected[miss_entry[m]];
    const int64_t row = host_loc ? host_loc[t] : t;
    plan.load_host[m] = row >= 0 ? row : host_row_or_throw(host_loc, t, where);
    plan.load_slot[m] = evictable[m];
  }

  // Commit: slot contents, then LRU = EVICTABLE[M:] ++ EVICTABLE[:M] ++ HITS.
  int32_t* st = state.slot_token;
  for (int32_t m = 0; m < nm; ++m) {
    const int32_t s = evictable[m];
    slot_of[miss_entry[m]] = s;
    st[s] = selected[miss_entry[m]];
  }
  int32_t* out = state.lru;
  std::memcpy(out, evictable + nm, sizeof(int32_t) * static_cast<size_t>(ne - nm));
  std::memcpy(out + (ne - nm), evictable, sizeof(int32_t) * static_cast<size_t>(nm));
  std::reverse_copy(part + ne, part + H, out + ne);

  c.misses = nm;
  c.hits = c.selected - c.newest_hits - nm;
  c.h2d_bytes = static_cast<int64_t>(nm) * row_bytes;
}

void swap_in(SwapInStateView state, const int32_t* selected, int32_t count, int32_t n, int32_t top_k,
             const int64_t* host_loc, int64_t row_bytes, const StepContext& where, SwapInPlan& plan) {
  thread_local SwapInScratch scratch;
  swap_in(state, selected, count, n, top_k, host_loc, row_bytes, where, plan, scratch);
}

}  // namespace hisparse::cpu_ref
