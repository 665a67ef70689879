// @brief PagedTokenToKVPoolAllocator: the three-part extend fill, decode fill, page release on last token free.
#include "cpu_ref/memory/paged_allocator.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::cpu_ref {

namespace {
constexpr Owner kMarked = -3;  // transient: the index is being claimed or freed by the call in progress
}

PagedTokenToKVPoolAllocator::PagedTokenToKVPoolAllocator(int64_t size, int64_t page_size, bool need_sort)
    : page_size_(page_size), num_pages_(page_size > 0 ? size / page_size : 0), need_sort_(need_sort) {
  if (page_size <= 0) throw_error("PagedTokenToKVPoolAllocator: page_size {} must be positive", page_size);
  if (num_pages_ <= 0) {
    throw_error("PagedTokenToKVPoolAllocator: size {} holds no whole page of {} tokens", size, page_size);
  }
  token_owner_.assign(static_cast<size_t>(index_limit()), kNoOwner);
  page_owner_.assign(static_cast<size_t>(num_pages_ + 1), kNoOwner);
  page_live_.assign(static_cast<size_t>(num_pages_ + 1), 0);
  for (int64_t p = 1; p <= num_pages_; ++p) free_.push_back(p);
}

void PagedTokenToKVPoolAllocator::check_index(int64_t index, const char* what) const {
  if (index < 0 || index >= index_limit()) {
    throw_error("PagedTokenToKVPoolAllocator::{}: index {} out of range [{}, {})", what, index, page_size_,
                index_limit());
  }
  if (index < page_size_) {
    throw_error("PagedTokenToKVPoolAllocator::{}: index {} lies in the reserved padding page 0", what, index);
  }
}

void PagedTokenToKVPoolAllocator::out_of_memory(const char* what, int64_t requested_tokens) const {
  throw OutOfMemoryError(std::string("PagedTokenToKVPoolAllocator::") + what, requested_tokens, available_size(),
                         evictable_tokens_);
}

void PagedTokenToKVPoolAllocator::take_page(int64_t page, Owner owner) {
  page_owner_[static_cast<size_t>(page)] = owner;
  ++owned_pages_;
}

void PagedTokenToKVPoolAllocator::own_token(int64_t index, Owner owner) {
  token_owner_[static_cast<size_t>(index)] = owner;
  ++page_live_[static_cast<size_t>(index / page_size_)];
  ++live_;
}

std::vector<int64_t> PagedTokenToKVPoolAllocator::alloc(int64_t need, Owner owner) {
  if (need <= 0 || need % page_size_ != 0) {
    throw_error("PagedTokenToKVPoolAllocator::alloc: need {} must be a positive multiple of page_size {}", need,
                page_size_);
  }
  if (owner < kAnonymous) throw_error("PagedTokenToKVPoolAllocator::alloc: invalid owner {}", owner);
  const int64_t pages = need / page_size_;
  if (pages > free_list_pages()) merge_and_sort_free();
  if (pages > free_list_pages()) out_of_memory("alloc", need);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(need));
  for (int64_t k = 0; k < pages; ++k) {
    const int64_t page = free_[static_cast<size_t>(k)];
    take_page(page, owner);
    for (int64_t o = 0; o < page_size_; ++o) {
      out.push_back(page * page_size_ + o);
      own_token(page * page_size_ + o, owner);
    }
  }
  free_.erase(free_.begin(), free_.begin() + pages);
  return out;
}

std::vector<int64_t> PagedTokenToKVPoolAllocator::alloc_extend(const std::vector<ExtendRequest>& batch) {
  // Pass 1: validate every request and mark the partial-page slots it will fill (so two requests of one batch
  // cannot both fill the same slot); undo the marks on any error.
  std::vector<int64_t> marked;
  auto fail = [&](const std::string& why) {
    for (int64_t t : marked) token_owner_[static_cast<size_t>(t)] = kNoOwner;
    throw Error("PagedTokenToKVPoolAllocator::alloc_extend: " + why);
  };
  int64_t extend_tokens = 0;
  int64_t new_pages = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const ExtendRequest& r = batch[i];
    if (r.owner < kAnonymous) fail(fmt::format("request {}: invalid owner {}", i, r.owner));
    if (r.prefix_len < 0 || r.seq_len < r.prefix_len) {
      fail(fmt::format("request {}: need 0 <= prefix_len ({}) <= seq_len ({})", i, r.prefix_len, r.seq_len));
    }
    if (r.prefix_len == 0 ? r.last_loc != -1 : r.last_loc < page_size_) {
      fail(fmt::format("request {}: last_loc {} invalid for prefix_len {}", i, r.last_loc, r.prefix_len));
    }
    if ((r.last_loc + 1) % page_size_ != r.prefix_len % page_size_) {
      fail(fmt::format("request {}: (last_loc {} + 1) % page_size {} != prefix_len {} % page_size", i, r.last_loc,
                       page_size_, r.prefix_len));
    }
    const int64_t prefix_page_end = (r.prefix_len + page_size_ - 1) / page_size_ * page_size_;
    const int64_t num1 = std::min(r.seq_len, prefix_page_end) - r.prefix_len;
    if (num1 > 0) {
      if (r.last_loc >= index_limit()) fail(fmt::format("request {}: last_loc {} out of range", i, r.last_loc));
      const int64_t page = r.last_loc / page_size_;
      if (page_owner_[static_cast<size_t>(page)] != r.owner || token_owner_[static_cast<size_t>(r.last_loc)] != r.owner) {
        fail(fmt::format("request {}: last_loc {} (page {}) is not held by owner {}", i, r.last_loc, page, r.owner));
      }
      for (int64_t t = r.last_loc + 1; t <= r.last_loc + num1; ++t) {
        if (token_owner_[static_cast<size_t>(t)] != kNoOwner) {
          fail(fmt::format("request {}: slot {} of its partial page is already allocated", i, t));
        }
        token_owner_[static_cast<size_t>(t)] = kMarked;
        marked.push_back(t);
      }
    }
    extend_tokens += r.seq_len - r.prefix_len;
    new_pages += num_new_pages_extend(r.prefix_len, r.seq_len, page_size_);
  }
  // SGLang merges on this over-estimate (not the exact page count), which decides which pages come next.
  if (extend_tokens / page_size_ + static_cast<int64_t>(batch.size()) + 1 > free_list_pages()) merge_and_sort_free();
  if (new_pages > free_list_pages()) {
    for (int64_t t : marked) token_owner_[static_cast<size_t>(t)] = kNoOwner;
    out_of_memory("alloc_extend", extend_tokens);
  }

  // Pass 2: fill. New pages are consumed from the free-list front in batch order.
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(extend_tokens));
  size_t cursor = 0;
  for (const ExtendRequest& r : batch) {
    const int64_t prefix_page_end = (r.prefix_len + page_size_ - 1) / page_size_ * page_size_;
    const int64_t num1 = std::min(r.seq_len, prefix_page_end) - r.prefix_len;
    for (int64_t t = r.last_loc + 1; t <= r.last_loc + num1; ++t) {
      own_token(t, r.owner);
      out.push_back(t);
    }
    if (r.prefix_len + num1 == r.seq_len) continue;
    const int64_t full_pages = r.seq_len / page_size_ - prefix_page_end / page_size_;
    for (int64_t k = 0; k < full_pages; ++k) {
      const int64_t page = free_[cursor++];
      take_page(page, r.owner);
      for (int64_t o = 0; o < page_size_; ++o) {
        own_token(page * page_size_ + o, r.owner);
        out.push_back(page * page_size_ + o);
      }
    }
    const int64_t num3 = r.seq_len % page_size_;
    if (num3 > 0) {
      const int64_t page = free_[cursor++];
      take_page(page, r.owner);
      for (int64_t o = 0; o < num3; ++o) {
        own_token(page * page_size_ + o, r.owner);
        out.push_back(page * page_size_ + o);
      }
    }
  }
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(cursor));
  return out;
}

std::vector<int64_t> PagedTokenToKVPoolAllocator::alloc_decode(const std::vector<DecodeRequest>& batch) {
  std::vector<int64_t> marked;
  auto fail = [&](const std::string& why) {
    for (int64_t t : marked) token_owner_[static_cast<size_t>(t)] = kNoOwner;
    throw Error("PagedTokenToKVPoolAllocator::alloc_decode: " + why);
  };
  int64_t new_pages = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const DecodeRequest& r = batch[i];
    if (r.owner < kAnonymous) fail(fmt::format("request {}: invalid owner {}", i, r.owner));
    if (r.seq_len < 1) fail(fmt::format("request {}: seq_len {} must be >= 1", i, r.seq_len));
    if (r.seq_len == 1 ? r.last_loc != -1 : r.last_loc < page_size_) {
      fail(fmt::format("request {}: last_loc {} invalid for seq_len {}", i, r.last_loc, r.seq_len));
    }
    if ((r.last_loc + 2) % page_size_ != r.seq_len % page_size_) {
      fail(fmt::format("request {}: (last_loc {} + 2) % page_size {} != seq_len {} % page_size", i, r.last_loc,
                       page_size_, r.seq_len));
    }
    if ((r.seq_len - 1) % page_size_ == 0) {
      ++new_pages;
      continue;
    }
    if (r.last_loc + 1 >= index_limit()) fail(fmt::format("request {}: last_loc {} out of range", i, r.last_loc));
    const int64_t page = r.last_loc / page_size_;
    if (page_owner_[static_cast<size_t>(page)] != r.owner || token_owner_[static_cast<size_t>(r.last_loc)] != r.owner) {
      fail(fmt::format("request {}: last_loc {} (page {}) is not held by owner {}", i, r.last_loc, page, r.owner));
    }
    const int64_t t = r.last_loc + 1;
    if (token_owner_[static_cast<size_t>(t)] != kNoOwner) {
      fail(fmt::format("request {}: slot {} after last_loc is already allocated", i, t));
    }
    token_owner_[static_cast<size_t>(t)] = kMarked;
    marked.push_back(t);
  }
  if (static_cast<int64_t>(batch.size()) > free_list_pages()) merge_and_sort_free();
  if (new_pages > free_list_pages()) {
    for (int64_t t : marked) token_owner_[static_cast<size_t>(t)] = kNoOwner;
    out_of_memory("alloc_decode", static_cast<int64_t>(batch.size()));
  }
  std::vector<int64_t> out;
  out.reserve(batch.size());
  size_t cursor = 0;
  for (const DecodeRequest& r : batch) {
    int64_t t = r.last_loc + 1;
    if ((r.seq_len - 1) % page_size_ == 0) {
      const int64_t page = free_[cursor++];
      take_page(page, r.owner);
      t = page * page_size_;
    }
    own_token(t, r.owner);
    out.push_back(t);
  }
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(cursor));
  return out;
}

std::vector<int64_t> PagedTokenToKVPoolAllocator::claim_page_tail(int64_t last_index, Owner owner) {
  check_index(last_index, "claim_page_tail");
  const int64_t page = last_index / page_size_;
  if (page_owner_[static_cast<size_t>(page)] != owner || token_owner_[static_cast<size_t>(last_index)] != owner) {
    throw_error("PagedTokenToKVPoolAllocator::claim_page_tail: index {} (page {}) is not held by owner {}",
                last_index, page, owner);
  }
  const int64_t end = (page + 1) * page_size_;
  for (int64_t t = last_index + 1; t < end; ++t) {
    if (token_owner_[static_cast<size_t>(t)] != kNoOwner) {
      throw_error("PagedTokenToKVPoolAllocator::claim_page_tail: index {} is already allocated", t);
    }
  }
  std::vector<int64_t> out;
  for (int64_t t = last_index + 1; t < end; ++t) {
    own_token(t, owner);
    out.push_back(t);
  }
  return out;
}

void PagedTokenToKVPoolAllocator::free(const int64_t* indices, int64_t count, Owner owner) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = indices[k];
    auto fail = [&](const std::string& why) {
      for (int64_t u = 0; u < k; ++u) token_owner_[static_cast<size_t>(indices[u])] = owner;
      throw Error("PagedTokenToKVPoolAllocator::free: " + why);
    };
    if (i < 0 || i >= index_limit()) fail(fmt::format("index {} out of range [{}, {})", i, page_size_, index_limit()));
    if (i < page_size_) fail(fmt::format("index {} lies in the reserved padding page 0", i));
    const Owner held = token_owner_[static_cast<size_t>(i)];
    if (held == kMarked) fail(fmt::format("index {} appears twice in one free (double free)", i));
    if (held == kNoOwner) fail(fmt::format("double free of index {}", i));
    if (held != owner) fail(fmt::format("index {} is held by owner {}, not by the caller {}", i, held, owner));
    token_owner_[static_cast<size_t>(i)] = kMarked;
  }
  std::vector<int64_t> released;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = indices[k];
    token_owner_[static_cast<size_t>(i)] = kNoOwner;
    const int64_t page = i / page_size_;
    if (--page_live_[static_cast<size_t>(page)] == 0) {
      page_owner_[static_cast<size_t>(page)] = kNoOwner;
      --owned_pages_;
      released.push_back(page);
    }
  }
  live_ -= count;
  release_pages(released);
}

void PagedTokenToKVPoolAllocator::release_pages(std::vector<int64_t>& pages) {
  if (pages.empty()) return;
  std::sort(pages.begin(), pages.end());  // SGLang releases torch.unique(index // page_size): sorted
  if (in_group_) {
    group_pages_.insert(group_pages_.end(), pages.begin(), pages.end());
  } else if (need_sort_) {
    staged_.insert(staged_.end(), pages.begin(), pages.end());
  } else {
    free_.insert(free_.begin(), pages.begin(), pages.end());
  }
}

void PagedTokenToKVPoolAllocator::free_group_begin() {
  if (in_group_) throw_error("PagedTokenToKVPoolAllocator::free_group_begin: a free group is already open");
  in_group_ = true;
}

void PagedTokenToKVPoolAllocator::free_group_end() {
  if (!in_group_) throw_error("PagedTokenToKVPoolAllocator::free_group_end: no free group is open");
  in_group_ = false;
  std::vector<int64_t> pages;
  pages.swap(group_pages_);
  release_pages(pages);
}

void PagedTokenToKVPoolAllocator::merge_and_sort_free() {
  if (staged_.empty()) return;
  std::vector<int64_t> all(free_.begin(), free_.end());
  all.insert(all.end(), staged_.begin(), staged_.end());
  std::sort(all.begin(), all.end());
  free_.assign(all.begin(), all.end());
  staged_.clear();
}

Owner PagedTokenToKVPoolAllocator::owner_of(int64_t index) const {
  if (index < 0 || index >= index_limit()) {
    throw_error("PagedTokenToKVPoolAllocator::owner_of: index {} out of range [0, {})", index, index_limit());
  }
  return token_owner_[static_cast<size_t>(index)];
}

Owner PagedTokenToKVPoolAllocator::page_owner(int64_t page) const {
  if (page < 0 || page > num_pages_) {
    throw_error("PagedTokenToKVPoolAllocator::page_owner: page {} out of range [0, {}]", page, num_pages_);
  }
  return page_owner_[static_cast<size_t>(page)];
}

std::vector<std::pair<int64_t, Owner>> PagedTokenToKVPoolAllocator::owned_indices() const {
  std::vector<std::pair<int64_t, Owner>> out;
  for (int64_t i = page_size_; i < index_limit(); ++i) {
    if (token_owner_[static_cast<size_t>(i)] != kNoOwner) out.emplace_back(i, token_owner_[static_cast<size_t>(i)]);
  }
  return out;
}

void PagedTokenToKVPoolAllocator::check_invariants() const {
  std::vector<uint8_t> listed(static_cast<size_t>(num_pages_ + 1), 0);
  auto visit = [&](int64_t p, const char* where) {
    if (p < 1 || p > num_pages_) throw_error("Paged allocator invariant: {} holds out-of-range page {}", where, p);
    if (listed[static_cast<size_t>(p)]) throw_error("Paged allocator invariant: page {} listed twice", p);
    if (page_owner_[static_cast<size_t>(p)] != kNoOwner) {
      throw_error("Paged allocator invariant: page {} is in the {} but owned", p, where);
    }
    listed[static_cast<size_t>(p)] = 1;
  };
  for (int64_t p : free_) visit(p, "free list");
  for (int64_t p : staged_) visit(p, "staged list");
  for (int64_t p : group_pages_) visit(p, "free group");
  int64_t live = 0;
  int64_t owned_pages = 0;
  for (int64_t p = 0; p <= num_pages_; ++p) {
    const Owner po = page_owner_[static_cast<size_t>(p)];
    int64_t n = 0;
    for (int64_t o = 0; o < page_size_; ++o) {
      const Owner to = token_owner_[static_cast<size_t>(p * page_size_ + o)];
      if (to == kNoOwner) continue;
      if (to != po) throw_error("Paged allocator invariant: token {} owned by {} in page of {}", p * page_size_ + o, to, po);
      ++n;
    }
    if (n != page_live_[static_cast<size_t>(p)]) throw_error("Paged allocator invariant: page {} live count", p);
    if (p == 0) {
      if (po != kNoOwner || n != 0) throw_error("Paged allocator invariant: reserved page 0 in use");
      continue;
    }
    if (po != kNoOwner) {
      ++owned_pages;
      if (n == 0) throw_error("Paged allocator invariant: page {} owned with no live token", p);
    } else if (!listed[static_cast<size_t>(p)]) {
      throw_error("Paged allocator invariant: page {} is neither owned nor free (lost)", p);
    }
    live += n;
  }
  if (live != live_ || owned_pages != owned_pages_) throw_error("Paged allocator invariant: counters disagree");
}

}  // namespace hisparse::cpu_ref
