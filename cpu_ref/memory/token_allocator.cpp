// @brief TokenToKVPoolAllocator: alloc from the front, free to a release list, sort-merge only when short.
#include "cpu_ref/memory/token_allocator.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::cpu_ref {

namespace {
constexpr Owner kFreeing = -3;  // transient mark while a free call validates its indices
}

TokenToKVPoolAllocator::TokenToKVPoolAllocator(int64_t size, bool need_sort) : size_(size), need_sort_(need_sort) {
  if (size <= 0) throw_error("TokenToKVPoolAllocator: size {} must be positive", size);
  owner_.assign(static_cast<size_t>(size + 1), kNoOwner);
  for (int64_t i = 1; i <= size; ++i) free_.push_back(i);
}

std::vector<int64_t> TokenToKVPoolAllocator::alloc(int64_t need, Owner owner) {
  if (need <= 0) throw_error("TokenToKVPoolAllocator::alloc: need {} must be positive", need);
  if (owner < kAnonymous) throw_error("TokenToKVPoolAllocator::alloc: invalid owner {}", owner);
  if (need_sort_ && need > static_cast<int64_t>(free_.size())) merge_and_sort_free();
  if (need > static_cast<int64_t>(free_.size())) {
    throw OutOfMemoryError("TokenToKVPoolAllocator", need, available_size(), evictable_tokens_);
  }
  std::vector<int64_t> out(free_.begin(), free_.begin() + need);
  free_.erase(free_.begin(), free_.begin() + need);
  for (int64_t i : out) owner_[static_cast<size_t>(i)] = owner;
  live_ += need;
  return out;
}

void TokenToKVPoolAllocator::free(const int64_t* indices, int64_t count, Owner owner) {
  // Validate everything first (marking as we go, so a repeat within the call is seen), undo on error.
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = indices[k];
    auto fail = [&](const std::string& why) {
      for (int64_t u = 0; u < k; ++u) owner_[static_cast<size_t>(indices[u])] = owner;
      throw Error("TokenToKVPoolAllocator::free: " + why);
    };
    if (i == 0) fail("index 0 is the reserved padding slot");
    if (i < 0 || i > size_) fail(fmt::format("index {} out of range [1, {}]", i, size_));
    const Owner held = owner_[static_cast<size_t>(i)];
    if (held == kFreeing) fail(fmt::format("index {} appears twice in one free (double free)", i));
    if (held == kNoOwner) fail(fmt::format("double free of index {}", i));
    if (held != owner) fail(fmt::format("index {} is held by owner {}, not by the caller {}", i, held, owner));
    owner_[static_cast<size_t>(i)] = kFreeing;
  }
  for (int64_t k = 0; k < count; ++k) owner_[static_cast<size_t>(indices[k])] = kNoOwner;
  live_ -= count;
  if (in_group_) {
    group_.insert(group_.end(), indices, indices + count);
  } else if (need_sort_) {
    release_.insert(release_.end(), indices, indices + count);
  } else {
    free_.insert(free_.end(), indices, indices + count);
  }
}

void TokenToKVPoolAllocator::free_group_begin() {
  if (in_group_) throw_error("TokenToKVPoolAllocator::free_group_begin: a free group is already open");
  in_group_ = true;
}

void TokenToKVPoolAllocator::free_group_end() {
  if (!in_group_) throw_error("TokenToKVPoolAllocator::free_group_end: no free group is open");
  in_group_ = false;
  if (need_sort_) {
    release_.insert(release_.end(), group_.begin(), group_.end());
  } else {
    free_.insert(free_.end(), group_.begin(), group_.end());
  }
  group_.clear();
}

void TokenToKVPoolAllocator::merge_and_sort_free() {
  if (release_.empty()) return;
  std::vector<int64_t> all(free_.begin(), free_.end());
  all.insert(all.end(), release_.begin(), release_.end());
  std::sort(all.begin(), all.end());
  free_.assign(all.begin(), all.end());
  release_.clear();
}

Owner TokenToKVPoolAllocator::owner_of(int64_t index) const {
  if (index < 0 || index > size_) throw_error("TokenToKVPoolAllocator::owner_of: index {} out of range", index);
  return owner_[static_cast<size_t>(index)];
}

std::vector<std::pair<int64_t, Owner>> TokenToKVPoolAllocator::owned_indices() const {
  std::vector<std::pair<int64_t, Owner>> out;
  for (int64_t i = 1; i <= size_; ++i) {
    if (owner_[static_cast<size_t>(i)] != kNoOwner) out.emplace_back(i, owner_[static_cast<size_t>(i)]);
  }
  return out;
}

void TokenToKVPoolAllocator::check_invariants() const {
  // Each index 1..size is in exactly one place: free list, release list, open group, or owned.
  std::vector<uint8_t> seen(static_cast<size_t>(size_ + 1), 0);
  auto visit = [&](int64_t i, const char* where) {
    if (i < 1 || i > size_) throw_error("TokenToKVPoolAllocator invariant: {} holds out-of-range index {}", where, i);
    if (seen[static_cast<size_t>(i)]) throw_error("TokenToKVPoolAllocator invariant: index {} listed twice", i);
    if (owner_[static_cast<size_t>(i)] != kNoOwner) {
      throw_error("TokenToKVPoolAllocator invariant: index {} is in the {} but owned", i, where);
    }
    seen[static_cast<size_t>(i)] = 1;
  };
  for (int64_t i : free_) visit(i, "free list");
  for (int64_t i : release_) visit(i, "release list");
  for (int64_t i : group_) visit(i, "free group");
  int64_t owned = 0;
  for (int64_t i = 1; i <= size_; ++i) {
    if (owner_[static_cast<size_t>(i)] != kNoOwner) {
      ++owned;
    } else if (!seen[static_cast<size_t>(i)]) {
      throw_error("TokenToKVPoolAllocator invariant: index {} is neither owned nor free (lost)", i);
    }
  }
  if (owned != live_) throw_error("TokenToKVPoolAllocator invariant: {} owned but counter says {}", owned, live_);
  if (owner_[0] != kNoOwner) throw_error("TokenToKVPoolAllocator invariant: reserved index 0 is owned");
}

}  // namespace hisparse::cpu_ref
