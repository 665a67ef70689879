// @brief The replay's counting form of the swap-in contract (sglang-lru, docs/swap_in.md) for many buffer sizes at
// once: the counters of cpu_ref::swap_in, step for step, without the plan (slot_of, load lists) the replay never reads.
//
// Why the counts need no slot numbers: the contract's LRU order is a permutation of slots, and what a step counts
// (hits, misses) depends only on which tokens the slots hold and in which LRU order, never on which slot holds which
// token. So a state here is the tokens in LRU order, `tok[j] = slot_token[lru[j]]`, and a step maps it exactly as the
// contract maps (slot_token, lru): walk tok, hits (tokens selected now) to HITS, the rest to EVICTABLE in order; the
// M misses (valid, non-newest entries not held, in entry order) replace EVICTABLE[:M];
// tok = EVICTABLE[M:] ++ misses ++ HITS. tests/sim/test_replay_fast.cpp compares it with cpu_ref::swap_in.
//
// Positions are marked once per (layer, step) in a byte table indexed by position and shared by every buffer size:
// with the step's base value b, a byte >= b is selected now, b + 1 + c hit in configuration c (configurations need no
// clearing between them), anything below b is stale. The base moves on by 1 + configurations every step, and the table
// is zeroed only when the byte would overflow (every ~250 / (1 + configurations) steps), so no per-step clearing. The
// table is n + 1 bytes (32 KiB at n = 32K: in L1); beyond kByteTableSpan x (K + H) positions a step goes through
// cpu_ref::swap_in instead (hashed table, O(K + H) memory).
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

/// Per-thread marks of one (layer, step).
class StepMarks {
 public:
  /// Positions per (K + H) up to which the byte table is used (same rule as cpu_ref::SwapInScratch's direct table,
  /// at 1 byte per position instead of 8).
  static constexpr int64_t kByteTableSpan = 256;

  /// Marks the step's valid positions for `configs` LRU configurations. Returns false if the step is invalid (out of
  /// range, padding other than -1, a duplicate; the caller then lets cpu_ref::validate_and_mark throw its exact
  /// message) or n is beyond the table's span (the caller uses the reference).
  bool mark(const int32_t* sel, int32_t count, int32_t n, int32_t K, int32_t H_max, int32_t configs);

  int32_t selected = 0;     // valid entries
  int32_t newest_hit = 0;   // 1 if n - 1 is selected
  uint8_t* tag = nullptr;   // tag[t] for t in [-1, n); tag[-1] is always 0
  uint32_t base = 0;        // this step's "selected" value; base + 1 + c: hit in configuration c
  size_t bytes() const { return table_.capacity() + (miss_tok.capacity() + hits.capacity()) * 4; }

  std::vector<int32_t> hits;      // [H_max + 8] HITS in LRU order
  std::vector<int32_t> miss_tok;  // [K + 8] missed tokens in entry order

 private:
  std::vector<uint8_t> table_;  // [capacity + 1]; tag = table_.data() + 1
  int32_t prev_configs_ = 0;
};

/// One sglang-lru state (tokens in LRU order) for one (request, layer, buffer size).
struct LruTokens {
  std::vector<int32_t> tok;  // [H]
  bool started = false;
  InitialState initial = InitialState::kIdentity;
  void reset(int32_t H, InitialState init);
};

/// One slow-path step (n > H) of configuration `code_index` (0-based among the step's LRU configurations) on marked
/// positions; updates `state`. Throws (corrupt state) only if a token were held twice. `simd`: use the AVX2 walk where
/// the CPU has it (same result; tests run both).
LruCounts lru_slow_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, StepMarks& marks,
                        int32_t code_index, const cpu_ref::StepContext& where, bool simd = true);

/// Whether lru_slow_step(simd = true) runs the AVX2 walk on this CPU.
bool lru_simd_available();

/// The same step through cpu_ref::swap_in (for n beyond the byte table, or when marks could not be used), on the same
/// token-order state; validates and throws exactly as the reference does.
LruCounts lru_reference_step(LruTokens& state, const int32_t* sel, int32_t count, int32_t n, int32_t top_k,
                             const cpu_ref::StepContext& where, cpu_ref::SwapInScratch& scratch, SwapInPlan& plan,
                             std::vector<int32_t>& slot_token, std::vector<int32_t>& lru);

}  // namespace hisparse::sim::replay_detail
