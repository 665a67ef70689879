// @brief HiSparseV2Admission: the decision SGLang's V2 coordinator makes when a request is admitted after prefill
// (hisparse_v2_coordinator.py, admit_request, at 09f8170 = current and ca0edd9 = older; docs/swap_in.md, "Two
// coordinators"), as integer bookkeeping: run the request as V2 (its page-aligned prefix evictable to host, an H-token
// temp buffer pinned) or as standard, and why. Its quotas are the coordinator's: host tokens reserved for admitted
// prefixes, expanded indexer pages, and the device tokens the temp buffer is allocated from.
#pragma once

#include <cstdint>
#include <map>

#include "core/hisparse_v2.h"

namespace hisparse::cpu_ref {

/// Why admit() ran a request as standard, in admit_request's order of checks; kV2 when it did not.
enum class V2Admit {
  kV2,
  kNoWholePage,          // num_pages == 0 (both rule sets)
  kShorterThanBuffer,    // tree_len < temp buffer H (current only)
  kHostCapacity,         // reserved host tokens + tree_len > host capacity (a capacity of 0 means unbounded)
  kIndexerPages,         // the expanded indexer page allocator has fewer free pages than the prefix has
  kTempBuffer,           // the device pool cannot give the H-token temp buffer (after evicting the tree)
};
const char* v2_admit_name(V2Admit a);

struct V2AdmissionSizes {
  int32_t page = kHisparseV2PageSize;
  int32_t H = 0;                   // temp buffer tokens per V2 request (device_buffer_size)
  int64_t host_capacity_tokens = 0;  // 0: no host pool attached, the gate is off (as in SGLang)
  int64_t indexer_pages = 0;       // expanded indexer pages in all
  V2Coordinator rules = V2Coordinator::kCurrent;
};

struct V2AdmitResult {
  V2Admit outcome = V2Admit::kV2;
  int32_t evicted_end = 0;  // [0, evicted_end) evictable to host; 0 when standard (everything resident)
  int64_t temp_tokens = 0;  // device tokens the temp buffer took (H when V2, else 0)
};

class HiSparseV2Admission {
 public:
  explicit HiSparseV2Admission(const V2AdmissionSizes& sizes);

  /// Admits request `id` after its prefill of `seq_tokens` tokens (the prompt; after a retraction, prompt plus the
  /// tokens generated so far, recomputed): tree_len = floor(seq_tokens / page) * page. `device_room_tokens`: what the
  /// device allocator can give once the tree is evicted. On kV2 the request holds its quotas until finish(); a
  /// standard request holds none. Throws hisparse::Error for a request already admitted as V2 or negative inputs.
  V2AdmitResult admit(int64_t id, int64_t seq_tokens, int64_t device_room_tokens);
  /// What admit() would decide for a request of `seq_tokens` with `device_room_tokens` given the quotas held now,
  /// taking nothing (simulate's admission asks it of every rank before it picks one, sim/serving/admission_policy.cpp).
  V2AdmitResult decide(int64_t seq_tokens, int64_t device_room_tokens) const;
  /// request_finished (or a retraction): gives back the request's host reservation and indexer pages; returns the
  /// temp-buffer tokens it frees (0 for a standard or unknown request).
  int64_t finish(int64_t id);

  int64_t host_reserved() const { return host_reserved_; }
  int64_t indexer_pages_free() const { return indexer_free_; }
  int64_t active() const { return static_cast<int64_t>(active_.size()); }
  /// Whether request `id` holds V2 quotas (admitted as V2 and not finished).
  bool admitted(int64_t id) const { return active_.count(id) > 0; }
  /// The tree-owned prefix request `id` was admitted with (0 for a standard or unknown request).
  int64_t tree_len(int64_t id) const {
    const auto it = active_.find(id);
    return it == active_.end() ? 0 : it->second;
  }
  const V2AdmissionSizes& sizes() const { return sizes_; }

 private:
  V2AdmissionSizes sizes_;
  int64_t host_reserved_ = 0;
  int64_t indexer_free_ = 0;
  std::map<int64_t, int64_t> active_;  // id -> tree_len
};

}  // namespace hisparse::cpu_ref
