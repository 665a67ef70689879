// @brief HostPool: the pinned host KV pool of HiSparse (SGLang's three layouts, paged per request) and req_to_host.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "core/host_layout.h"
#include "cpu_ref/memory/allocator_common.h"

namespace hisparse::cpu_ref {

/// Shape of the host pool: device_size × host_to_device_ratio tokens rounded up to whole pages (SGLang sizes its
/// MLATokenToKVPoolHost the same way), `num_layers` layers of `row_bytes` per token, in one of SGLang's three
/// layouts (core/host_layout.h): layer_first (the default; row (layer, loc) at layer × layer_bytes + loc × row_bytes),
/// page_first (a token's layers side by side) or page_head (MHA/GQA: a row is `heads` chunks of row_bytes / heads,
/// grouped by page and head).
struct HostPoolLayout {
  int64_t size = 0;        // tokens (a page multiple)
  int64_t page_size = 0;   // tokens per page
  int64_t num_layers = 0;  // layers stored
  int64_t row_bytes = 0;   // bytes of one token's KV row in one layer
  HostLayout kind = HostLayout::kLayerFirst;
  int64_t heads = 1;       // chunks per row (row_bytes / heads each)
  int64_t layer_bytes() const { return size * row_bytes; }
  int64_t total_bytes() const { return num_layers * layer_bytes(); }
  HostLayoutShape shape() const { return HostLayoutShape{size, page_size, num_layers, heads, row_bytes / heads}; }
  /// Byte offset of head `head` of row (layer, loc) from the pool base.
  int64_t chunk_offset(int64_t layer, int64_t loc, int64_t head) const {
    return host_chunk_offset(kind, shape(), layer, loc, head);
  }
  /// Byte offset of a row's first chunk (the whole row for layer_first and page_first).
  int64_t row_offset(int64_t layer, int64_t loc) const { return chunk_offset(layer, loc, 0); }
};

/// Pages are handed to requests as their tokens get host copies; req_to_host[req][pos] is the host row of token
/// `pos` of request slot `req`, -1 while that token has no copy. A request's rows are allocated page by page
/// (allocated_len is a page multiple, like SGLang's req_to_host_pool_allocated_len), but unlike SGLang an entry
/// only becomes >= 0 once its token is assigned a copy, so "-1 = no copy" stays exact inside a page.
/// Optionally backed by a real byte buffer (small sizes only) so tests can write and read rows.
class HostPool {
 public:
  static constexpr int64_t kMaxBackedBytes = int64_t{1} << 30;

  HostPool(int64_t device_size, int64_t host_to_device_ratio, int64_t page_size, int64_t num_layers,
           int64_t row_bytes, int64_t max_requests, int64_t max_context_len, bool backed = false,
           HostLayout layout = HostLayout::kLayerFirst, int64_t heads = 1);

  const HostPoolLayout& layout() const { return layout_; }
  int64_t size() const { return layout_.size; }
  int64_t page_size() const { return layout_.page_size; }
  int64_t num_pages() const { return layout_.size / layout_.page_size; }
  int64_t available_size() const { return static_cast<int64_t>(free_pages_.size()) * layout_.page_size; }
  int64_t max_requests() const { return max_requests_; }
  int64_t max_context_len() const { return max_context_len_; }

  /// Gives positions start..start+count-1 of request `req` host rows, taking new pages when they pass the
  /// request's allocated length; returns the rows. Throws on a hole (start > allocated_len), on a position that
  /// already has a copy, past max_context_len, or OutOfMemoryError (nothing changed) when pages run out.
  std::vector<int64_t> assign(int64_t req, int64_t start, int64_t count);
  /// Pages `assign` would need to take for these positions.
  int64_t pages_needed(int64_t req, int64_t start, int64_t count) const;
  /// Returns all of the request's pages and resets its row to -1. Returns the number of pages freed.
  int64_t free_request(int64_t req);

  int64_t host_loc(int64_t req, int64_t pos) const;
  /// req_to_host row of a request ([max_context_len], -1 = no copy): what swap_in reads as host_loc.
  const int64_t* req_to_host(int64_t req) const;
  int64_t allocated_len(int64_t req) const;
  const std::vector<int64_t>& pages_of(int64_t req) const;
  /// Request holding a host page (kNoOwner if free).
  Owner page_owner(int64_t page) const;

  /// Address of the row's first chunk on the real buffer (0-based offsets when not backed).
  uint64_t row_address(int64_t layer, int64_t loc) const;
  bool backed() const { return !data_.empty(); }
  /// The backed buffer ([total_bytes], laid out as layout().kind), for the layout-aware copies; nullptr if not backed.
  uint8_t* data() { return data_.empty() ? nullptr : data_.data(); }
  /// Copies row_bytes to/from row (layer, loc), chunk by chunk in page_head; the row's page must be held by some
  /// request.
  void write_row(int64_t layer, int64_t loc, const uint8_t* src);
  void read_row(int64_t layer, int64_t loc, uint8_t* dst) const;

  /// Pages still held (page, request), for leak checks.
  std::vector<std::pair<int64_t, Owner>> owned_pages() const;
  void check_invariants() const;

 private:
  void check_req(int64_t req, const char* what) const;
  void check_row(int64_t layer, int64_t loc, const char* what) const;

  HostPoolLayout layout_;
  int64_t max_requests_;
  int64_t max_context_len_;
  std::deque<int64_t> free_pages_;                // front = next handed out; freed pages go to the back
  std::vector<Owner> page_owner_;                 // [num_pages]
  std::vector<int64_t> req_to_host_;              // [max_requests × max_context_len], -1 = no copy
  std::vector<std::vector<int64_t>> req_pages_;   // [max_requests] pages of each request, in position order
  std::vector<uint8_t> data_;                     // [total_bytes] when backed
};

}  // namespace hisparse::cpu_ref
