// @brief The replay's counting form of the swap-in contract (sglang-lru, docs/swap_in.md) for many buffer sizes at
// once: the counters of cpu_ref::swap_in, step for step, without the plan (slot_of, load lists) the replay never reads.
//
// Why the counts need no slot numbers: the contract's LRU order is a permutation of slots, and what a step counts
// (hits, misses) depends only on which tokens the slots hold and in which LRU order, never on which slot holds which
// token. So a state here is the tokens in LRU order, `tok[j] = slot_token[lru[j]]`, and a step maps it exactly as the
// contract maps (slot_token, lru): walk tok, hits (tokens selected now) to HITS, the rest to EVICTABLE in order; the
// M misses (valid, non-newest entries not held, in entry order) replace EVICTABLE[:M];
// tok = EVICTABLE[M:] ++ misses ++ HITS. tests/sim/replay/test_replay_differential.cpp compares it with cpu_ref::swap_in.
//
// Two bitmaps over positions keep every random access of a step in L1 (4 KiB each at n = 32K, where a byte per
// position would take the whole 32 KiB L1 and push out the walk's state):
// - the step's selection (StepMarks, one per thread, shared by every buffer size): set once per (layer, step),
//   cleared after it;
// - the tokens a state holds (LruTokens::held, one per state), updated with the M evictions and M loads of a step.
// A step then first finds the misses (entries not held: one bit test each), which also gives the number of hits, so
// the LRU walk compacts EVICTABLE in place straight to its place in the next order (its first M, the evicted, into
// slack in front), and only the misses and HITS are copied after it. Beyond kTableSpan x (K + H) positions a step goes
// through cpu_ref::swap_in instead (hashed table, O(K + H) memory).
#pragma once

#include <cstdint>
#include <vector>

#include "core/swap_in_types.h"
#include "cpu_ref/swap_in.h"

namespace hisparse::sim::replay_detail {

/// Counters of one (layer, step, configuration).
struct LruCounts {
  int32_t selected = 0;
  int32_t newest_hits = 0;
  int32_t misses = 0;
};

/// A bitmap over token positions with one word in front for the -1 of an empty slot: bit t is bit (t & 31) of
/// word (t >> 5) + 1, and t = -1 (arithmetic shift: word -1 + 1 = 0) reads word 0, which is never set.
struct PositionBits {
  std::vector<uint32_t> words;
  /// Grows (new words zero, old ones kept) so that positions [0, span) are covered.
  void cover(int64_t span) {
    const size_t need = static_cast<size_t>((span + 31) >> 5) + 1;
    if (words.size() < need) words.resize(need, 0u);
  }
  int64_t span() const { return words.empty() ? 0 : (static_cast<int64_t>(words.size()) - 1) << 5; }
  const uint32_t* at() const { return words.data() + 1; }
  uint32_t* at() { return words.data() + 1; }
};

/// Per-thread marks of one (layer, step).
class StepMarks {
 public:
  /// Positions per (K + H) up to which the bitmaps are used (as cpu_ref::SwapInScratch's direct table; a state's
  /// bitmap then holds at most 32 x (K + H) bytes).
  static constexpr int64_t kTableSpan = 256;

  /// Marks the step's valid positions. Returns false if the step is invalid (out of range, padding other than -1, a
  /// duplicate; the caller then lets cpu_ref::validate_and_mark throw its exact message) or n is beyond the table's
  /// span (the caller uses the reference). The list must stay valid until clear() (or the next mark()).
  bool mark(const int32_t* sel, int32_t count, int32_t n, int32_t K, int32_t H_max);
  /// Clears the marks of the last mark() (while its list is still valid; else the next mark() clears a range).
  void clear();
  /// Positions a state may hold and still run lru_slow_step against these marks.
  int64_t limit() const { return limit_; }

  int32_t selected = 0;    // valid entries
  int32_t newest_hit = 0;  // 1 if n - 1 is selected
  PositionBits bits;       // the selected positions; zero elsewhere

  std::vector<int32_t> miss_tok;  // [K + 8] missed tokens in entry order
  std::vector<int32_t> hits;      // [H_max + 16] HITS of a step in LRU order
  size_t bytes() const { return (bits.words.capacity() + miss_tok.capacity() + hits.capacity()) * 4; }

 private:
  const int32_t* sel_ = nullptr;  // the marked list (for clear())
  int32_t count_ = 0;
  bool dirty_ = false;
  int64_t lo_ = 0, hi_ = -1;      // words of bits.at() set by the last mark()
  int64_t limit_ = 0;
};

/// One sglang-lru state (tokens in LRU order and the set they form) for one (request, layer, buffer size). The
/// members below `initial` belong to lru_slow_step / lru_reference_step.
struct LruTokens {
  void reset(int32_t H, InitialState init);
  int32_t size() const { return H; }
  /// Tokens in LRU order, H of them (-1: empty slot).
  const int32_t* tok() const { return cur.data() + front; }
  std::vector<int32_t> tokens() const { return {tok(), tok() + H}; }

  bool started = false;
  InitialState initial = InitialState::kIdentity;

  int32_t H = 0;
  size_t front = 0;                // slack in front of the tokens: a step writes its evicted tokens there
  std::vector<int32_t> cur;        // [front + H + kBackSlack]: the order at cur[front..front + H)
  PositionBits held;               // the tokens of tok(), when held_ok
  bool held_ok = false;
  int64_t span = 0;                // every held token is < span (the largest n seen; H after an identity start)
  static constexpr size_t kBackSlack = 16;  // vector stores run up to 8 entries past an end
};

/// One slow-path step (n > H) on marked positions; updates `state`. Throws (corrupt state) only if a token were held
/// twice. `simd`: use the AVX2 loops where the CPU has them (same result; tests run both).
LruCounts lru_slow_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, StepMarks& marks,
                        const cpu_ref::StepContext& where, bool simd = true);

/// Whether lru_slow_step(simd = true) runs the AVX2 loops on this CPU.
bool lru_simd_available();

/// The same step through cpu_ref::swap_in (for n beyond the bitmaps, or when marks could not be used), on the same
/// token-order state; validates and throws exactly as the reference does.
LruCounts lru_reference_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, int32_t top_k,
                             const cpu_ref::StepContext& where, cpu_ref::SwapInScratch& scratch, SwapInPlan& plan,
                             std::vector<int32_t>& slot_token, std::vector<int32_t>& lru);

}  // namespace hisparse::sim::replay_detail
