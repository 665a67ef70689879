// @brief CPU reference of the swap-in contract (docs/swap_in.md): one request, one layer, one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/swap_in_types.h"

namespace hisparse::cpu_ref {

/// Where a step comes from, so that invalid input can be reported as "request R, layer L, step S".
struct StepContext {
  int64_t request = 0;
  int32_t layer = 0;
  int64_t step = 0;
};

/// Which positions a step selected, and as which entry: the two layouts SwapInScratch chooses between. Both are
/// plain pointers for the hot loops (nothing is reloaded through the scratch after a store) and offer the same calls:
///   mark(t, i)      position t (0 <= t < n) is entry i; returns -1, or the entry that marked t already
///   contains(t)     whether t was marked at this step (t may be anything, -1 included)
///   find(t)         the entry that marked t, or -1
///   entry_of(t)     the entry of a position known to be marked

/// Position-indexed and epoch-stamped: one load per lookup and nothing to clear between steps, but 8 bytes per
/// position of the sequence. Used while n is within SwapInScratch's direct span, so its memory stays O(K + H).
struct DirectPositionTable {
  uint64_t* marks;  // [capacity + 1] (epoch << 32) | entry; marks[capacity] is never stamped
  uint32_t capacity;
  uint32_t epoch;

  int32_t mark(int32_t t, int32_t i) {
    const uint64_t m = marks[t];
    if ((m >> 32) == epoch) return static_cast<int32_t>(static_cast<uint32_t>(m));
    marks[t] = (static_cast<uint64_t>(epoch) << 32) | static_cast<uint32_t>(i);
    return -1;
  }
  bool contains(int32_t t) const {
    const uint32_t u = static_cast<uint32_t>(t);  // -1 and positions beyond the array look up the unstamped cell
    return (marks[u < capacity ? u : capacity] >> 32) == epoch;
  }
  int32_t find(int32_t t) const {
    const uint32_t u = static_cast<uint32_t>(t);
    const uint64_t m = marks[u < capacity ? u : capacity];
    return (m >> 32) == epoch ? static_cast<int32_t>(static_cast<uint32_t>(m)) : -1;
  }
  int32_t entry_of(int32_t t) const { return static_cast<int32_t>(static_cast<uint32_t>(marks[t])); }
};

/// Open addressing keyed by position: Fibonacci hashing into 2^b home cells (>= 4 per entry, load factor <= 1/4),
/// linear probing without wrap-around (the array has room for every entry past the last home cell). A cell is one
/// word: key = position + 1 in the low half (0 = empty), entry in the high half (-1 in an empty cell). Memory is
/// O(K) whatever n is; begin() empties the cells the previous step filled (listed in `filled`).
struct HashedPositionTable {
  static constexpr uint64_t kEmpty = 0xFFFFFFFF00000000u;  // key 0, entry -1

  uint64_t* cells;    // [2^b + max entries + 2]
  uint32_t shift;     // 32 - b
  uint32_t* filled;   // [max entries] cells filled at this step
  uint32_t nfilled;

  uint32_t home(int32_t t) const { return (static_cast<uint32_t>(t) * 0x9E3779B9u) >> shift; }
  int32_t mark(int32_t t, int32_t i) {
    const uint32_t key = static_cast<uint32_t>(t) + 1;
    const uint64_t value = (static_cast<uint64_t>(static_cast<uint32_t>(i)) << 32) | key;
    const uint32_t h = home(t);
    const uint32_t k0 = static_cast<uint32_t>(cells[h]), k1 = static_cast<uint32_t>(cells[h + 1]);
    uint32_t at = h + (k0 != 0);
    if (!((k0 == 0) | ((k0 != key) & (k1 == 0)))) {  // rare: both first cells taken, or t is there already
      for (at = h;; ++at) {
        const uint32_t k = static_cast<uint32_t>(cells[at]);
        if (k == 0) break;
        if (k == key) return static_cast<int32_t>(cells[at] >> 32);
      }
    }
    cells[at] = value;
    filled[nfilled++] = at;
    return -1;
  }
  /// The first two cells are read and chosen between without a branch; a third is needed for ~3% of lookups.
  int32_t find(int32_t t) const {
    const uint32_t key = static_cast<uint32_t>(t) + 1;  // -1's key 0 finds an empty cell, whose entry is -1
    const uint64_t* p = cells + home(t);
    const uint64_t c0 = p[0], c1 = p[1];
    const uint32_t k0 = static_cast<uint32_t>(c0), k1 = static_cast<uint32_t>(c1);
    if ((k0 != key) & (k0 != 0) & (k1 != key) & (k1 != 0)) {
      for (p += 2;; ++p) {
        const uint32_t k = static_cast<uint32_t>(*p);
        if (k == key || k == 0) return static_cast<int32_t>(*p >> 32);
      }
    }
    // k0 matches or is empty (its entry is then -1): c0; else c1, which matches or is empty.
    const uint64_t use0 = static_cast<uint64_t>((k0 == key) | (k0 == 0));
    return static_cast<int32_t>((c1 ^ ((c0 ^ c1) & (0 - use0))) >> 32);
  }
  bool contains(int32_t t) const { return find(t) >= 0; }
  int32_t entry_of(int32_t t) const { return find(t); }
};

/// Reusable working memory of swap_in (one per thread). Its memory is O(K + H) whatever the sequence length: the
/// position table is direct (fastest) while n <= direct_span x (K + H), hashed beyond (a step at n = 2^24 with
/// K = 2048 and H = 4096 holds ~170 KB instead of the 128 MiB of a table indexed by position).
class SwapInScratch {
 public:
  /// Positions per (K + H) up to which the direct table is used: at most 8 x 256 = 2 KiB per entry and slot (12 MiB
  /// at K = 2048, H = 4096, covering n <= 1,572,864). Beyond that a position-indexed array no longer fits the caches
  /// and the hashed table costs about the same (measured: `replay` of a trace at n = 4M, K = 2048: 1.15x the time,
  /// an eighth of the memory; bench_swap_in's steps moved to n = 8M: hashed 1.7x faster); below it the direct table
  /// is up to 1.35x faster (a replay at n = 1M, K = 2048).
  static constexpr int32_t kDirectSpan = 256;
  /// direct_span = 0: always hashed; a huge span: always direct (tests compare both layouts).
  explicit SwapInScratch(int32_t direct_span = kDirectSpan) : direct_span_(direct_span) {}

  /// Starts a step at sequence length n with at most `entries` marked positions and a buffer of H slots; picks the
  /// table. Returns the step's epoch (policies stamp slot_mark with it).
  uint32_t begin(int32_t n, int32_t entries, int32_t H);
  /// Calls f with the step's table (DirectPositionTable or HashedPositionTable), valid until the next begin().
  template <class F>
  decltype(auto) with_table(F&& f) {
    if (direct_) return f(DirectPositionTable{marks_.data(), capacity_, epoch});
    return f(HashedPositionTable{cells_.data(), shift_, filled_.data(), static_cast<uint32_t>(filled_count_)});
  }
  /// After marking into a hashed table: how many cells it filled (the next begin() empties them).
  void set_filled(uint32_t count) { filled_count_ = count; }
  bool direct() const { return direct_; }
  /// Bytes this scratch holds (position tables and per-slot arrays): what a step costs in memory.
  size_t bytes() const;

  std::vector<int32_t> hits;        // [H] hit slots (policies: ascending slot index)
  std::vector<int32_t> evictable;   // [H] EVICTABLE from the front, HITS reversed from the back (swap_in)
  std::vector<int32_t> miss_entry;  // [H] entry index of each miss, in miss order
  std::vector<int32_t> victims;     // [H] slot of each miss, in miss order (policies other than the contract)
  std::vector<uint32_t> slot_mark;  // [H] == epoch when the slot is hit at this step (policies)
  uint32_t epoch = 0;

 private:
  int32_t direct_span_;
  bool direct_ = true;
  std::vector<uint64_t> marks_;  // DirectPositionTable::marks
  uint32_t capacity_ = 0;
  std::vector<uint64_t> cells_;  // HashedPositionTable::cells
  std::vector<uint32_t> filled_;
  size_t filled_count_ = 0;
  uint32_t shift_ = 32;
};

/// Sets lru = [0..H-1] and slot_token to identity (slot i holds token i) or empty (-1).
void init_swap_in_state(SwapInStateView state, InitialState initial);

/// Runs one step of the contract on `state`.
///   selected[0..count-1]: token positions (distinct, < n, -1 = padding), count <= top_k
///   n: sequence length at this step (n-1 is the newest token)
///   host_loc[token]: host pool row of each token, -1 = no host copy (nullptr: token t lives at host row t)
///   row_bytes: bytes of one KV row (for the h2d_bytes counter)
/// Fills `plan` (slot_of, loads in miss order, counters) and updates `state` on the slow path.
/// Throws hisparse::Error on invalid input, naming request, layer, step and value; state is unchanged then.
/// Uses a thread-local SwapInScratch.
void swap_in(SwapInStateView state, const int32_t* selected, int32_t count, int32_t n, int32_t top_k,
             const int64_t* host_loc, int64_t row_bytes, const StepContext& where, SwapInPlan& plan);

/// Same, with caller-owned scratch (the replay hot path keeps one per thread).
void swap_in(SwapInStateView state, const int32_t* selected, int32_t count, int32_t n, int32_t top_k,
             const int64_t* host_loc, int64_t row_bytes, const StepContext& where, SwapInPlan& plan,
             SwapInScratch& scratch);

/// Validates a step (count <= top_k, positions -1 or in [0, n), no duplicates), marks every valid position in the
/// scratch's table (scratch.with_table gives it until the next begin), fills plan.slot_of with -1 for padding and
/// kUnassigned otherwise, and the selected/newest_hits counters. Shared by swap_in and the other policies so all
/// reject the same input.
uint32_t validate_and_mark(const int32_t* selected, int32_t count, int32_t n, int32_t top_k, int32_t H,
                           const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch);

/// plan.slot_of value of a valid entry not yet given a slot (never visible after a step).
inline constexpr int32_t kUnassigned = -2;

/// Host row of token t (identity when host_loc is null); throws the contract's "no host copy" error.
int64_t host_row_or_throw(const int64_t* host_loc, int32_t token, const StepContext& where);

}  // namespace hisparse::cpu_ref
