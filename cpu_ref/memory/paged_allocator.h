// @brief PagedTokenToKVPoolAllocator: page-granular KV allocator with SGLang's alloc_extend / alloc_decode patterns.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "cpu_ref/memory/allocator_common.h"

namespace hisparse::cpu_ref {

/// Pages 1..num_pages of page_size tokens (page 0 is reserved for padding, as in SGLang); token index =
/// page × page_size + offset, so indices run up to (num_pages + 1) × page_size - 1.
///
/// alloc_extend, per request: (1) fill the rest of the request's partial last page (last_loc+1, ...),
/// (2) whole new pages, (3) one new page for the tail, filled from its start. New pages are taken from the front
/// of the free list in batch order; each request's tail page is the last of its new pages.
/// alloc_decode, per request: last_loc+1 when the partial page has room, else the first token of a new page.
///
/// Where this differs from SGLang (on purpose, so misuse is an error rather than silent corruption):
/// - Ownership is tracked per token. SGLang's free() releases every page any freed index touches; here a page
///   returns to the free list only when all tokens allocated in it are freed. Callers that free whole requests
///   (as SGLang's do) see the same page order. The unallocated tail of a request's partial page stays reserved
///   for that request until the page is released.
/// - The debug-mode asserts of SGLang ((last_loc+1) % page == prefix_len % page and the like) always run.
/// - Out of memory throws OutOfMemoryError instead of returning None; nothing is changed then.
class PagedTokenToKVPoolAllocator {
 public:
  PagedTokenToKVPoolAllocator(int64_t size, int64_t page_size, bool need_sort = true);

  int64_t size() const { return num_pages_ * page_size_; }
  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return num_pages_; }
  /// One past the largest token index (pool rows including the reserved page).
  int64_t index_limit() const { return (num_pages_ + 1) * page_size_; }
  /// (free + staged pages) × page_size, like SGLang; pages held back by an open free group do not count.
  int64_t available_size() const { return static_cast<int64_t>(free_.size() + staged_.size()) * page_size_; }
  int64_t free_list_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t staged_pages() const { return static_cast<int64_t>(staged_.size()); }
  int64_t pending_pages_in_group() const { return static_cast<int64_t>(group_pages_.size()); }
  int64_t owned_pages() const { return owned_pages_; }
  /// Tokens allocated (owned); owned_pages × page_size - used_size are reserved page tails.
  int64_t used_size() const { return live_; }

  /// Page-aligned allocation of need/page_size whole pages (need % page_size must be 0).
  std::vector<int64_t> alloc(int64_t need, Owner owner = kAnonymous);
  std::vector<int64_t> alloc_extend(const std::vector<ExtendRequest>& batch);
  std::vector<int64_t> alloc_decode(const std::vector<DecodeRequest>& batch);
  /// Claims the unallocated rest of the page holding `last_index` (last_index+1 .. end of page) for `owner`, who
  /// must own that page: how HiSparse pads a device buffer to a whole page. Returns the claimed indices.
  std::vector<int64_t> claim_page_tail(int64_t last_index, Owner owner);

  /// Frees tokens held by `owner`; pages whose allocated tokens are all free are released (sorted, unique).
  /// Throws (nothing freed) on the reserved page, out-of-range indices, double free or another owner's index.
  void free(const int64_t* indices, int64_t count, Owner owner = kAnonymous);
  void free(const std::vector<int64_t>& indices, Owner owner = kAnonymous) {
    free(indices.data(), static_cast<int64_t>(indices.size()), owner);
  }
  void free_group_begin();
  void free_group_end();
  void merge_and_sort_free();

  Owner owner_of(int64_t index) const;
  Owner page_owner(int64_t page) const;
  /// Free-list order (front first), for tests that check which pages come next.
  std::vector<int64_t> free_list() const { return {free_.begin(), free_.end()}; }
  std::vector<std::pair<int64_t, Owner>> owned_indices() const;
  void check_invariants() const;
  void set_evictable_tokens(int64_t tokens) { evictable_tokens_ = tokens; }

 private:
  void check_index(int64_t index, const char* what) const;
  void take_page(int64_t page, Owner owner);
  void own_token(int64_t index, Owner owner);
  void release_pages(std::vector<int64_t>& pages);
  [[noreturn]] void out_of_memory(const char* what, int64_t requested_tokens) const;

  int64_t page_size_;
  int64_t num_pages_;
  bool need_sort_;
  std::deque<int64_t> free_;            // free page ids, front = next handed out
  std::vector<int64_t> staged_;         // released pages waiting for a merge (need_sort only)
  std::vector<int64_t> group_pages_;    // released inside an open free group
  bool in_group_ = false;
  std::vector<Owner> token_owner_;      // [index_limit], kNoOwner = not allocated
  std::vector<Owner> page_owner_;       // [num_pages + 1], kNoOwner = page not held
  std::vector<int32_t> page_live_;      // [num_pages + 1] allocated tokens in each page
  int64_t live_ = 0;
  int64_t owned_pages_ = 0;
  int64_t evictable_tokens_ = 0;
};

}  // namespace hisparse::cpu_ref
