// @brief The HiSparse V2 swap-in on the GPU (docs/swap_in.md, "HiSparse V2"): one thread block per (request, layer)
// row, every selected position resolved to its resident device page, a buffer hit or a load into a free slot, bit for
// bit as cpu_ref::swap_in_v2 (hisparse validate --only swap-in-v2). Host arrays in and out: the function uploads,
// launches once and downloads (a validation and test entry, not a serving path). No CUDA headers here.
#pragma once

#include <cstdint>

namespace hisparse::cuda {

/// Words of each row's counters: selected, resident (device pages, the newest token included), hits, misses.
inline constexpr int kSwapInV2CounterWords = 4;

/// A batch of independent rows. Inputs must be valid (cpu_ref::swap_in_v2 validates; the kernel trusts them, as
/// SGLang's does the indexer's top-k): positions distinct, in [0, n) or -1, slot_pos holding distinct positions.
struct SwapInV2Batch {
  int32_t rows = 0;
  int32_t top_k = 0;                     // entries per row (-1 = padding)
  int32_t H = 0;                         // slots per row
  const int32_t* selected = nullptr;     // [rows][top_k]
  const int32_t* evicted_end = nullptr;  // [rows] positions below it (and from evicted_begin on) live on the host only
  const int32_t* evicted_begin = nullptr;  // [rows] positions below it stay on the device (HiCache evicted only the
                                           // prefix's tail nodes); nullptr = 0 for every row (the whole prefix)
  int32_t* slot_pos = nullptr;           // [rows][H] in/out: the position each slot holds, -1 = empty
  int32_t* slot_of = nullptr;            // [rows][top_k] out: buffer slot, H = resident page, -1 = padding
  int32_t* load_slot = nullptr;          // [rows][top_k] out: slot of each load in miss order (first misses valid)
  int32_t* load_pos = nullptr;           // [rows][top_k] out: position of each load
  int64_t* counters = nullptr;           // [rows][kSwapInV2CounterWords] out
};

/// Runs the batch on the current GPU. Throws hisparse::Error without a GPU, or when top_k or H exceed what one
/// block's shared memory holds (the message names the limit).
void swap_in_v2(const SwapInV2Batch& batch);

}  // namespace hisparse::cuda
