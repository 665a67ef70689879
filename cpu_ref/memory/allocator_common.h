// @brief Vocabulary shared by the memory pools: owners, batch request rows, the out-of-memory error.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace hisparse::cpu_ref {

/// Who holds an index. Requests use their id (>= 0); kAnonymous is for callers that do not track owners.
/// Every free names the owner, so freeing an index someone else holds is caught rather than corrupting them.
using Owner = int64_t;
inline constexpr Owner kAnonymous = -1;
inline constexpr Owner kNoOwner = -2;  // internal: the index is free

/// Thrown when an allocation does not fit. A typed subclass so a scheduler can catch it and retract or evict;
/// nothing was changed when it is thrown.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& what_pool, int64_t requested, int64_t available, int64_t evictable);
  int64_t requested() const { return requested_; }
  int64_t available() const { return available_; }
  int64_t evictable() const { return evictable_; }

 private:
  int64_t requested_;
  int64_t available_;
  int64_t evictable_;
};

/// One request of an alloc_extend batch (SGLang passes these as parallel tensors).
struct ExtendRequest {
  int64_t prefix_len = 0;  // tokens the request already holds
  int64_t seq_len = 0;     // tokens after this extend (> prefix_len)
  int64_t last_loc = -1;   // index of token prefix_len-1, -1 when prefix_len == 0
  Owner owner = kAnonymous;
};

/// One request of an alloc_decode batch: the request grows from seq_len-1 to seq_len tokens.
struct DecodeRequest {
  int64_t seq_len = 0;    // tokens after this step (>= 1)
  int64_t last_loc = -1;  // index of token seq_len-2, -1 when seq_len == 1
  Owner owner = kAnonymous;
};

/// New pages an extend needs: pages covering seq_len minus pages already covering prefix_len.
inline int64_t num_new_pages_extend(int64_t prefix_len, int64_t seq_len, int64_t page_size) {
  return (seq_len + page_size - 1) / page_size - (prefix_len + page_size - 1) / page_size;
}

}  // namespace hisparse::cpu_ref
