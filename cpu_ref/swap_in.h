// @brief CPU reference of the swap-in contract (../shared/design/SWAP_IN.md): one request, one layer, one step.
#pragma once

#include <cstdint>
#include <string>

#include "core/swap_in_types.h"

namespace hisparse::cpu_ref {

/// Where a step comes from, so that invalid input can be reported as "request R, layer L, step S".
struct StepContext {
  int64_t request = 0;
  int32_t layer = 0;
  int64_t step = 0;
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
void swap_in(SwapInStateView state, const int32_t* selected, int32_t count, int32_t n, int32_t top_k,
             const int64_t* host_loc, int64_t row_bytes, const StepContext& where, SwapInPlan& plan);

}  // namespace hisparse::cpu_ref
