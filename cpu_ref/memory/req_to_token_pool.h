// @brief ReqToTokenPool: request slots → the KV index of each of the request's tokens (SGLang's first pool level).
#pragma once

#include <cstdint>
#include <vector>

namespace hisparse::cpu_ref {

/// A table of `size` rows × `max_context_len` token locations. A request takes a row (a "request slot") while it
/// runs; position p of that row holds the KV index of its token p. Like SGLang, slots are handed out from the
/// front of a free list and returned to its back, and rows start zeroed (0 is the padding index).
class ReqToTokenPool {
 public:
  ReqToTokenPool(int64_t size, int64_t max_context_len);

  int64_t size() const { return size_; }
  int64_t max_context_len() const { return max_context_len_; }
  int64_t available_size() const { return static_cast<int64_t>(free_slots_.size()); }

  /// Takes `count` slots; throws OutOfMemoryError (nothing taken) when fewer are free.
  std::vector<int64_t> alloc(int64_t count);
  int64_t alloc_one() { return alloc(1).front(); }
  /// Returns a slot; its row is zeroed. Throws on a slot that is out of range or not in use.
  void free(int64_t slot);

  /// Writes locs[0..count-1] to positions start..start+count-1 of `slot`'s row.
  void write(int64_t slot, int64_t start, const int64_t* locs, int64_t count);
  void write(int64_t slot, int64_t start, const std::vector<int64_t>& locs) {
    write(slot, start, locs.data(), static_cast<int64_t>(locs.size()));
  }
  /// Positions start..start+count-1 of `slot`'s row.
  std::vector<int64_t> read(int64_t slot, int64_t start, int64_t count) const;
  int64_t at(int64_t slot, int64_t position) const;

  bool in_use(int64_t slot) const;
  /// Slots still taken (for leak checks at teardown), ascending.
  std::vector<int64_t> slots_in_use() const;

 private:
  void check_slot(int64_t slot, const char* what) const;
  void check_range(int64_t slot, int64_t start, int64_t count, const char* what) const;

  int64_t size_;
  int64_t max_context_len_;
  std::vector<int64_t> req_to_token_;  // [size × max_context_len]
  std::vector<int64_t> free_slots_;    // front = next handed out
  std::vector<uint8_t> in_use_;        // [size]
};

}  // namespace hisparse::cpu_ref
