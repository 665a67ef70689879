// @brief CPU reference of the swap-in contract (docs/swap_in.md): one request, one layer, one step.
#pragma once

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

/// Reusable working memory of swap_in (one per thread). Token membership is an epoch-stamped array indexed by
/// token position instead of a hash set: one load per lookup, and no clearing between steps.
class SwapInScratch {
 public:
  /// Starts a step whose positions are < n; returns the epoch that marks "selected at this step".
  uint32_t begin(int32_t n, int32_t H);

  std::vector<uint64_t> mark;       // [capacity + 1] (epoch << 32) | entry index; the last one is never stamped
  std::vector<int32_t> hits;        // [H] hit slots (policies: ascending slot index)
  std::vector<int32_t> evictable;   // [H] EVICTABLE from the front, HITS reversed from the back (swap_in)
  std::vector<int32_t> miss_entry;  // [H] entry index of each miss, in miss order
  std::vector<int32_t> victims;     // [H] slot of each miss, in miss order (policies other than the contract)
  std::vector<uint32_t> slot_mark;  // [H] == epoch when the slot is hit at this step (policies)
  uint32_t capacity = 0;            // positions 0..capacity-1 can be marked
  uint32_t epoch = 0;
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

/// Validates a step (count <= top_k, positions -1 or in [0, n), no duplicates), stamps every valid position
/// into scratch.mark with the returned epoch, fills plan.slot_of with -1 for padding and kUnassigned otherwise,
/// and the selected/newest_hits counters. Shared by swap_in and the other policies so all reject the same input.
uint32_t validate_and_mark(const int32_t* selected, int32_t count, int32_t n, int32_t top_k, int32_t H,
                           const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch);

/// plan.slot_of value of a valid entry not yet given a slot (never visible after a step).
inline constexpr int32_t kUnassigned = -2;

/// Host row of token t (identity when host_loc is null); throws the contract's "no host copy" error.
int64_t host_row_or_throw(const int64_t* host_loc, int32_t token, const StepContext& where);

}  // namespace hisparse::cpu_ref
