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

/// Which of SGLang's V2 coordinators the rules follow (docs/swap_in.md, "Two coordinators"). Both are
/// sgl-project/sglang python/sglang/srt/managers/hisparse_v2_coordinator.py:
/// - kCurrent, at 09f8170: admit_request also runs as standard a request whose tree-owned prefix is shorter than the
///   temp buffer (`tree_len < self.temp_slot_tokens`), and the scheduler's HiSparseV2AdmitBudget budgets it so;
/// - kOlder, at ca0edd9 (the kernel at cb4d3e8 follows it): only a prefix of no whole page runs as standard.
enum class V2Coordinator : int32_t { kCurrent = 0, kOlder = 1 };
inline constexpr const char* kV2CurrentCommit = "09f8170";
inline constexpr const char* kV2OlderCommit = "ca0edd9";

/// End of the evicted prefix once admission has decided: v2_evicted_end, or 0 when the request runs as standard
/// (everything resident, no buffer). Under kCurrent a prefix shorter than the buffer H runs as standard: V2 would pin
/// H device tokens to free fewer than H (admit_request, 09f8170).
HS_HOST_DEVICE int32_t v2_admitted_evicted_end(int32_t n0, int32_t page, int32_t H, V2Coordinator rules) {
  const int32_t end = v2_evicted_end(n0, page);
  return rules == V2Coordinator::kCurrent && end < H ? 0 : end;
}

/// Start of the evicted part of a request's tree-owned prefix [0, E) once HiCache has had to free `demand` of its
/// tokens (docs/swap_in.md, "Eviction per radix node"). The positions [begin, E) are on the host only, [0, begin) stay
/// in their device pages.
/// - kCurrent: the tree evicts whole radix nodes, a device leaf at a time, so the evicted part of a path is always its
///   tail (sglang 09f8170, mem_cache/unified_radix_cache.py `_is_device_leaf`: a node with a device child is no leaf;
///   `_evict_device_leaf` demotes one node whole; unified_cache_components/full_component.py pushes a node's parent
///   once it becomes a leaf). The request's nodes end at multiples of `node_tokens` (a node per chunked-prefill chunk,
///   an assumption) and at E; begin is the largest such boundary b with E - b >= demand (0 when none is far enough).
///   node_tokens <= 0: the whole prefix is one node.
/// - kOlder: the whole prefix, whatever the demand (the project's former assumption: the upper bound on host loads).
HS_HOST_DEVICE int32_t v2_evicted_begin(int32_t E, int32_t node_tokens, int32_t demand, V2Coordinator rules) {
  if (E <= 0 || rules == V2Coordinator::kOlder) return 0;
  if (demand <= 0) return E;  // nothing evicted
  if (node_tokens <= 0 || demand >= E) return 0;
  // The last node is [floor((E - 1) / node) * node, E); every earlier node is a full node_tokens long.
  const int32_t last_start = ((E - 1) / node_tokens) * node_tokens;
  if (E - last_start >= demand) return last_start;
  const int32_t more = demand - (E - last_start);  // tokens still to free from the full nodes before it
  const int32_t nodes = (more + node_tokens - 1) / node_tokens;
  const int32_t begin = last_start - nodes * node_tokens;
  return begin > 0 ? begin : 0;
}

/// V2's top_k rule, under both coordinators: a multiple of the page (the coordinator asserts it in __init__, so temp
/// slots map to whole pages, hisparse_v2_coordinator.py __init__ at both commits) and a power of two (the plan
/// kernel's lanes are `tl.arange(0, TOPK)`, swap_in_plan_kernel in python/sglang/kernels/ops/kvcache/hisparse_v2.py
/// at cb4d3e8, line 83; Triton accepts only a power-of-two range there).
HS_HOST_DEVICE bool v2_top_k_ok(int32_t top_k, int32_t page) {
  return top_k > 0 && page > 0 && top_k % page == 0 && (top_k & (top_k - 1)) == 0;
}

/// V2's buffer-size rule (hisparse_v2_coordinator.py asserts it): H >= top_k, a multiple of the page, a power of two.
HS_HOST_DEVICE bool v2_buffer_size_ok(int32_t H, int32_t top_k, int32_t page) {
  return H >= top_k && H > 0 && H % page == 0 && (H & (H - 1)) == 0;
}

}  // namespace hisparse
