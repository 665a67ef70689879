// @brief The data the swap-in contract (docs/swap_in.md) reads, changes and produces.
// Plain views (pointers + sizes) so the CPU reference, the CUDA kernels and the simulator share one layout.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hs_host_device.h"

namespace hisparse {

enum class InitialState { kIdentity, kEmpty };

/// Per request, per layer buffer state. Non-owning.
struct SwapInStateView {
  int32_t* slot_token = nullptr;  // [H] token held by each slot, -1 = empty
  int32_t* lru = nullptr;         // [H] permutation of 0..H-1; index 0 = least recently used
  int32_t H = 0;                  // device_buffer_size; slot H is the reserved newest-token slot
};

/// Counters of one step (identical definitions on the fast and slow paths).
struct SwapInCounters {
  int64_t selected = 0;     // valid entries (T[i] >= 0)
  int64_t hits = 0;         // valid entries that were neither the newest token nor a load
  int64_t newest_hits = 0;  // entries equal to n-1
  int64_t misses = 0;       // entries that caused a load
  int64_t h2d_bytes = 0;    // misses × row_bytes
  bool fast_path = false;   // n <= H
};

/// The plan one step produces; gather executes the loads, sim charges time for them.
struct SwapInPlan {
  std::vector<int32_t> slot_of;    // [K'] slot of each entry (H = reserved newest slot), -1 for -1 entries
  std::vector<int64_t> load_host;  // [M] host index of each load, in miss order
  std::vector<int32_t> load_slot;  // [M] device slot of each load, in miss order
  SwapInCounters counters;
};

}  // namespace hisparse
