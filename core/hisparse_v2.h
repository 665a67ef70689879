// @brief The integer rules of the HiSparse V2 swap-in (docs/swap_in.md, "HiSparse V2") that the CPU reference
// (cpu_ref/swap_in_v2.cpp) and the CUDA kernel (cuda/swap_in_v2.cu) share: which positions are device-resident,
// and which buffer sizes V2 accepts.
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"

namespace hisparse {

/// Tokens per KV page of the DSA models V2 serves: SGLang runs its NSA backend with page_size 64 (the same page the
/// scenarios' pools use, core/deployment_spec.h). V2 asserts top_k and the buffer size are multiples of it.
inline constexpr int32_t kHisparseV2PageSize = 64;

/// End of the evicted prefix of a request whose first replayed decode step has sequence length n0: V2 admits only
/// the page-aligned prefill prefix [0, floor((n0 - 1) / page) * page) to the radix tree, and only tree pages can be
/// evicted to the host (hisparse_v2_coordinator.py, admit_request: tree_len = cache_protected_len). The unaligned
/// tail of the prompt and every decode token stay in request-owned device pages. 0 when the prefix is shorter than a
/// page (V2 then runs the request as a standard one: everything resident).
HS_HOST_DEVICE int32_t v2_evicted_end(int32_t n0, int32_t page) {
  return n0 <= 1 ? 0 : ((n0 - 1) / page) * page;
}

/// V2's buffer-size rule (hisparse_v2_coordinator.py asserts it): H >= top_k, a multiple of the page, a power of two.
HS_HOST_DEVICE bool v2_buffer_size_ok(int32_t H, int32_t top_k, int32_t page) {
  return H >= top_k && H > 0 && H % page == 0 && (H & (H - 1)) == 0;
}

}  // namespace hisparse
