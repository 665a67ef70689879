// @brief HiSparseTokenToKVPoolAllocator: a logical allocator (device × ratio) paired with a device allocator.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_ref/memory/allocator_common.h"
#include "cpu_ref/memory/paged_allocator.h"

namespace hisparse::cpu_ref {

/// SGLang's HiSparse pair. Logical indices (what req_to_token holds) come from a paged allocator of
/// device_size × host_to_device_ratio tokens; the rows that really sit in HBM come from a second paged allocator
/// of device_size tokens; mapping[logical] is the device index of a logical token (0 = unmapped: page 0 of the
/// device pool is the reserved padding page, so 0 never names a real row).
///
/// Prefill (alloc_extend) takes both; decode (alloc_decode) and direct-to-host admission (alloc_logical_only)
/// take logical indices only, because their device rows come from the request's device buffer.
/// available_size = min(logical available, device available).
class HiSparseTokenToKVPoolAllocator {
 public:
  HiSparseTokenToKVPoolAllocator(int64_t device_size, int64_t page_size, int64_t host_to_device_ratio,
                                 bool need_sort = true);

  int64_t size() const { return logical_.size(); }  // the logical size, as SGLang reports it
  int64_t device_size() const { return device_.size(); }
  int64_t page_size() const { return logical_.page_size(); }
  int64_t available_size() const;

  std::vector<int64_t> alloc_extend(const std::vector<ExtendRequest>& batch);
  std::vector<int64_t> alloc_decode(const std::vector<DecodeRequest>& batch) { return logical_.alloc_decode(batch); }
  std::vector<int64_t> alloc_logical_only(const std::vector<ExtendRequest>& batch) {
    return logical_.alloc_extend(batch);
  }
  /// Builds a device buffer of `need` slots (a page multiple) for a request whose logical tokens are `logical`:
  /// their mapped device rows are taken over (mapping cleared), extra rows freed or, when short, the last partial
  /// page padded and whole pages added. Throws OutOfMemoryError before changing anything if the device is short.
  std::vector<int64_t> alloc_device_buffer(const std::vector<int64_t>& logical, int64_t need, Owner owner);
  /// Frees device rows (entries <= 0 are skipped, as SGLang does).
  void free_hisparse_indices(const std::vector<int64_t>& device_indices, Owner owner);
  /// Frees logical indices and the device rows they map to; clears their mapping.
  void free(const std::vector<int64_t>& logical, Owner owner);

  /// Device index of a logical index (-1 → -1, as SGLang's trailing -1 entry gives).
  int64_t translate(int64_t logical) const;
  void set_mapping(int64_t logical, int64_t device);
  void clear_mapping(int64_t logical) { set_mapping(logical, 0); }

  const PagedTokenToKVPoolAllocator& logical() const { return logical_; }
  const PagedTokenToKVPoolAllocator& device() const { return device_; }
  PagedTokenToKVPoolAllocator& device() { return device_; }
  const std::vector<int64_t>& mapping() const { return mapping_; }
  /// Logical indices with a non-zero mapping (leak check: empty at teardown).
  std::vector<int64_t> mapped_indices() const;
  /// Both allocators' invariants, and: a mapped logical index is allocated, its device row is allocated to the
  /// same owner, and no device row is mapped twice.
  void check_invariants() const;

 private:
  void check_logical(int64_t logical, const char* what) const;

  PagedTokenToKVPoolAllocator logical_;
  PagedTokenToKVPoolAllocator device_;
  std::vector<int64_t> mapping_;  // [logical index_limit], 0 = unmapped
};

}  // namespace hisparse::cpu_ref
