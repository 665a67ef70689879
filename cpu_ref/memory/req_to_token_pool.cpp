// @brief ReqToTokenPool: slot free list and row reads/writes, every misuse an error.
#include "cpu_ref/memory/req_to_token_pool.h"

#include <algorithm>

#include "core/error.h"
#include "cpu_ref/memory/allocator_common.h"

namespace hisparse::cpu_ref {

ReqToTokenPool::ReqToTokenPool(int64_t size, int64_t max_context_len)
    : size_(size), max_context_len_(max_context_len) {
  if (size <= 0 || max_context_len <= 0) {
    throw_error("ReqToTokenPool: size {} and max_context_len {} must both be positive", size, max_context_len);
  }
  req_to_token_.assign(static_cast<size_t>(size * max_context_len), 0);
  in_use_.assign(static_cast<size_t>(size), 0);
  free_slots_.reserve(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) free_slots_.push_back(i);
}

std::vector<int64_t> ReqToTokenPool::alloc(int64_t count) {
  if (count <= 0) throw_error("ReqToTokenPool::alloc: count {} must be positive", count);
  if (count > available_size()) {
    throw OutOfMemoryError("ReqToTokenPool (request slots; lower max running requests)", count, available_size(),
                           0);
  }
  std::vector<int64_t> out(free_slots_.begin(), free_slots_.begin() + count);
  free_slots_.erase(free_slots_.begin(), free_slots_.begin() + count);
  for (int64_t s : out) in_use_[static_cast<size_t>(s)] = 1;
  return out;
}

void ReqToTokenPool::check_slot(int64_t slot, const char* what) const {
  if (slot < 0 || slot >= size_) throw_error("ReqToTokenPool::{}: slot {} out of range [0, {})", what, slot, size_);
  if (!in_use_[static_cast<size_t>(slot)]) throw_error("ReqToTokenPool::{}: slot {} is not in use", what, slot);
}

void ReqToTokenPool::check_range(int64_t slot, int64_t start, int64_t count, const char* what) const {
  check_slot(slot, what);
  if (start < 0 || count < 0 || start + count > max_context_len_) {
    throw_error("ReqToTokenPool::{}: positions [{}, {}) of slot {} outside [0, {})", what, start, start + count, slot,
                max_context_len_);
  }
}

void ReqToTokenPool::free(int64_t slot) {
  if (slot >= 0 && slot < size_ && !in_use_[static_cast<size_t>(slot)]) {
    throw_error("ReqToTokenPool::free: double free of slot {}", slot);
  }
  check_slot(slot, "free");
  in_use_[static_cast<size_t>(slot)] = 0;
  std::fill_n(req_to_token_.begin() + slot * max_context_len_, max_context_len_, 0);
  free_slots_.push_back(slot);
}

void ReqToTokenPool::write(int64_t slot, int64_t start, const int64_t* locs, int64_t count) {
  check_range(slot, start, count, "write");
  std::copy_n(locs, count, req_to_token_.begin() + slot * max_context_len_ + start);
}

std::vector<int64_t> ReqToTokenPool::read(int64_t slot, int64_t start, int64_t count) const {
  check_range(slot, start, count, "read");
  auto first = req_to_token_.begin() + slot * max_context_len_ + start;
  return std::vector<int64_t>(first, first + count);
}

int64_t ReqToTokenPool::at(int64_t slot, int64_t position) const {
  check_range(slot, position, 1, "at");
  return req_to_token_[static_cast<size_t>(slot * max_context_len_ + position)];
}

bool ReqToTokenPool::in_use(int64_t slot) const {
  return slot >= 0 && slot < size_ && in_use_[static_cast<size_t>(slot)] != 0;
}

std::vector<int64_t> ReqToTokenPool::slots_in_use() const {
  std::vector<int64_t> out;
  for (int64_t s = 0; s < size_; ++s) {
    if (in_use_[static_cast<size_t>(s)]) out.push_back(s);
  }
  return out;
}

}  // namespace hisparse::cpu_ref
