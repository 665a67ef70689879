// @brief TokenToKVPoolAllocator: token-granular KV index allocator with SGLang's release-list / sort-on-demand.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "cpu_ref/memory/allocator_common.h"

namespace hisparse::cpu_ref {

/// Hands out KV indices 1..size (index 0 is reserved, as in SGLang, for the dummy writes of padded tokens).
/// With need_sort (SGLang's default when a prefix cache is used) freed indices go to a release list and are
/// merged into the free list, sorted, only when an allocation finds the free list too short; without it they
/// are appended to the free list at once. Between free_group_begin/end, freed indices stop being owned at once
/// (a second free is caught) but only become allocatable at free_group_end.
class TokenToKVPoolAllocator {
 public:
  TokenToKVPoolAllocator(int64_t size, bool need_sort = true);

  int64_t size() const { return size_; }
  /// free list + release list (not indices held back by an open free group), like SGLang.
  int64_t available_size() const { return static_cast<int64_t>(free_.size() + release_.size()); }
  int64_t used_size() const { return live_; }
  int64_t pending_in_group() const { return static_cast<int64_t>(group_.size()); }

  /// Takes `need` indices from the front of the free list; throws OutOfMemoryError (nothing taken) if short.
  std::vector<int64_t> alloc(int64_t need, Owner owner = kAnonymous);
  /// Frees indices held by `owner`. Throws (nothing freed) on index 0, out-of-range, double free (also within
  /// one call) or an index held by another owner.
  void free(const int64_t* indices, int64_t count, Owner owner = kAnonymous);
  void free(const std::vector<int64_t>& indices, Owner owner = kAnonymous) {
    free(indices.data(), static_cast<int64_t>(indices.size()), owner);
  }
  void free_group_begin();
  void free_group_end();
  /// Moves the release list into the free list and sorts it (what alloc does when it runs short).
  void merge_and_sort_free();

  Owner owner_of(int64_t index) const;
  /// (index, owner) of every index still allocated, ascending: non-empty at teardown means a leak.
  std::vector<std::pair<int64_t, Owner>> owned_indices() const;
  /// Full O(size) self-check of the bookkeeping; throws on any inconsistency.
  void check_invariants() const;
  /// What a prefix cache could evict; only reported in out-of-memory messages.
  void set_evictable_tokens(int64_t tokens) { evictable_tokens_ = tokens; }

 private:
  int64_t size_;
  bool need_sort_;
  std::deque<int64_t> free_;      // front = next handed out
  std::vector<int64_t> release_;  // freed, waiting for a merge (need_sort only)
  std::vector<int64_t> group_;    // freed inside an open free group
  bool in_group_ = false;
  std::vector<Owner> owner_;      // [size + 1], kNoOwner when free; [0] reserved
  int64_t live_ = 0;
  int64_t evictable_tokens_ = 0;
};

}  // namespace hisparse::cpu_ref
