// @brief CPU reference of the HiSparse V2 swap-in (docs/swap_in.md, "HiSparse V2"): one request, one layer, one
// step. Each selected position is served from a resident device page, else from the request's hot buffer (a hit,
// zero copy), else copied from its host row into a buffer slot: free (empty) slots first, then stale residents, each
// in slot order. The CUDA kernel (cuda/swap_in_v2.cu) must match it bit for bit.
#pragma once

#include <cstdint>

#include "core/swap_in_types.h"
#include "cpu_ref/swap_in.h"

namespace hisparse::cpu_ref {

/// Per (request, layer) V2 state: the position each of the H buffer slots holds, -1 = empty. Non-owning.
struct SwapInV2StateView {
  int32_t* slot_pos = nullptr;  // [H]
  int32_t H = 0;
};

/// One step's input. Positions in [evicted_begin, evicted_end) live on the host only; the others are device-resident
/// (core/hisparse_v2.h: v2_evicted_end, and v2_evicted_begin for a prefix whose head HiCache kept on the device).
struct SwapInV2Step {
  const int32_t* selected = nullptr;  // [count] positions, -1 = padding
  int32_t count = 0;                  // <= top_k
  int32_t n = 0;                      // sequence length
  int32_t top_k = 0;
  int32_t evicted_end = 0;            // positions [0, evicted_end) live on the host only
  int32_t page = 0;                   // page size (V2's buffer-size rule)
  const int64_t* host_loc = nullptr;  // [n] host row per token, -1 = none; nullptr = token t at host row t
  int64_t row_bytes = 0;
  int32_t evicted_begin = 0;          // positions [0, evicted_begin) stay in their device pages
};

/// Runs one V2 step on `state`. plan.slot_of: the buffer slot of each hit or load, H for a device-resident entry,
/// -1 for padding; the loads in miss (entry) order. Counters: `newest_hits` counts the device-resident entries (the
/// newest token is always one), `hits` the buffer hits, `misses` the host copies; fast_path is always false.
/// Throws hisparse::Error (state unchanged) on the contract's invalid inputs, on a buffer size V2 refuses (not a
/// power of two, not a multiple of the page, < top_k) and on an evicted entry without a host copy.
void swap_in_v2(SwapInV2StateView state, const SwapInV2Step& in, const StepContext& where, SwapInPlan& plan,
                SwapInScratch& scratch);

}  // namespace hisparse::cpu_ref
