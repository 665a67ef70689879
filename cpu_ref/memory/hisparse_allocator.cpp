// @brief HiSparseTokenToKVPoolAllocator: paired logical/device allocation and the logical → device mapping.
#include "cpu_ref/memory/hisparse_allocator.h"

#include <algorithm>

#include "core/error.h"

namespace hisparse::cpu_ref {

HiSparseTokenToKVPoolAllocator::HiSparseTokenToKVPoolAllocator(int64_t device_size, int64_t page_size,
                                                               int64_t host_to_device_ratio, bool need_sort)
    : logical_((host_to_device_ratio >= 1 ? host_to_device_ratio : 1) * device_size, page_size, need_sort),
      device_(device_size, page_size, need_sort) {
  if (host_to_device_ratio < 1) {
    throw_error("HiSparseTokenToKVPoolAllocator: host_to_device_ratio {} must be >= 1", host_to_device_ratio);
  }
  mapping_.assign(static_cast<size_t>(logical_.index_limit()), 0);
}

int64_t HiSparseTokenToKVPoolAllocator::available_size() const {
  return std::min(logical_.available_size(), device_.available_size());
}

void HiSparseTokenToKVPoolAllocator::check_logical(int64_t logical, const char* what) const {
  if (logical < 0 || logical >= logical_.index_limit()) {
    throw_error("HiSparseTokenToKVPoolAllocator::{}: logical index {} out of range [0, {})", what, logical,
                logical_.index_limit());
  }
}

int64_t HiSparseTokenToKVPoolAllocator::translate(int64_t logical) const {
  if (logical == -1) return -1;
  check_logical(logical, "translate");
  return mapping_[static_cast<size_t>(logical)];
}

void HiSparseTokenToKVPoolAllocator::set_mapping(int64_t logical, int64_t device) {
  check_logical(logical, "set_mapping");
  if (device < 0 || device >= device_.index_limit()) {
    throw_error("HiSparseTokenToKVPoolAllocator::set_mapping: device index {} out of range [0, {})", device,
                device_.index_limit());
  }
  mapping_[static_cast<size_t>(logical)] = device;
}

std::vector<int64_t> HiSparseTokenToKVPoolAllocator::alloc_extend(const std::vector<ExtendRequest>& batch) {
  int64_t new_pages = 0;
  int64_t extend_tokens = 0;
  std::vector<ExtendRequest> device_batch = batch;
  for (size_t i = 0; i < batch.size(); ++i) {
    new_pages += num_new_pages_extend(batch[i].prefix_len, batch[i].seq_len, page_size());
    extend_tokens += batch[i].seq_len - batch[i].prefix_len;
    if (batch[i].prefix_len > 0 && batch[i].prefix_len % page_size() != 0) {
      const int64_t dev_last = translate(batch[i].last_loc);
      if (dev_last <= 0) {
        throw_error("HiSparseTokenToKVPoolAllocator::alloc_extend: request {} extends a partial page but its last "
                    "token (logical {}) has no device row (extending after admission is not supported)",
                    i, batch[i].last_loc);
      }
      device_batch[i].last_loc = dev_last;
    } else if (batch[i].prefix_len > 0) {
      // Whole-page prefix: SGLang passes the translated loc; only its page offset matters, which is the page end.
      device_batch[i].last_loc = page_size() * 2 - 1;
    }
  }
  // SGLang checks the page count against both pools before touching either.
  if (new_pages * page_size() > logical_.available_size() || new_pages * page_size() > device_.available_size()) {
    throw OutOfMemoryError("HiSparseTokenToKVPoolAllocator::alloc_extend", extend_tokens, available_size(), 0);
  }
  std::vector<int64_t> logical = logical_.alloc_extend(batch);
  std::vector<int64_t> device;
  try {
    device = device_.alloc_extend(device_batch);
  } catch (...) {
    // Keep the pair consistent: give the logical indices back before reporting.
    size_t off = 0;
    for (const ExtendRequest& r : batch) {
      const auto n = static_cast<size_t>(r.seq_len - r.prefix_len);
      logical_.free(std::vector<int64_t>(logical.begin() + static_cast<std::ptrdiff_t>(off),
                                         logical.begin() + static_cast<std::ptrdiff_t>(off + n)),
                    r.owner);
      off += n;
    }
    throw;
  }
  for (size_t k = 0; k < logical.size(); ++k) mapping_[static_cast<size_t>(logical[k])] = device[k];
  return logical;
}

std::vector<int64_t> HiSparseTokenToKVPoolAllocator::alloc_device_buffer(const std::vector<int64_t>& logical,
                                                                         int64_t need, Owner owner) {
  const int64_t ps = page_size();
  if (need <= 0 || need % ps != 0) {
    throw_error("HiSparseTokenToKVPoolAllocator::alloc_device_buffer: need {} must be a positive multiple of {}",
                need, ps);
  }
  std::vector<int64_t> rows;
  for (int64_t l : logical) {
    check_logical(l, "alloc_device_buffer");
    if (logical_.owner_of(l) != owner) {
      throw_error("HiSparseTokenToKVPoolAllocator::alloc_device_buffer: logical index {} is not held by owner {}",
                  l, owner);
    }
    const int64_t d = mapping_[static_cast<size_t>(l)];
    if (d > 0) {
      if (device_.owner_of(d) != owner) {
        throw_error("HiSparseTokenToKVPoolAllocator::alloc_device_buffer: device row {} is not held by owner {}", d,
                    owner);
      }
      rows.push_back(d);
    }
  }
  const auto have = static_cast<int64_t>(rows.size());
  const int64_t padded = (have + ps - 1) / ps * ps;
  if (have < need && need - padded > device_.available_size()) {
    throw OutOfMemoryError("HiSparseTokenToKVPoolAllocator::alloc_device_buffer", need - padded,
                           device_.available_size(), 0);
  }
  for (int64_t l : logical) mapping_[static_cast<size_t>(l)] = 0;
  if (have >= need) {
    std::vector<int64_t> extra(rows.begin() + need, rows.end());
    rows.resize(static_cast<size_t>(need));
    if (!extra.empty()) device_.free(extra, owner);
    return rows;
  }
  if (have % ps != 0) {
    std::vector<int64_t> tail = device_.claim_page_tail(rows.back(), owner);
    rows.insert(rows.end(), tail.begin(), tail.end());
  }
  if (need > padded) {
    std::vector<int64_t> more = device_.alloc(need - padded, owner);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

void HiSparseTokenToKVPoolAllocator::free_hisparse_indices(const std::vector<int64_t>& device_indices, Owner owner) {
  std::vector<int64_t> rows;
  rows.reserve(device_indices.size());
  for (int64_t d : device_indices) {
    if (d > 0) rows.push_back(d);
  }
  device_.free(rows, owner);
}

void HiSparseTokenToKVPoolAllocator::free(const std::vector<int64_t>& logical, Owner owner) {
  std::vector<int64_t> rows;
  for (int64_t l : logical) {
    check_logical(l, "free");
    const int64_t d = mapping_[static_cast<size_t>(l)];
    if (d > 0) {
      if (device_.owner_of(d) != owner) {
        throw_error("HiSparseTokenToKVPoolAllocator::free: logical {} maps to device row {} not held by owner {}", l,
                    d, owner);
      }
      rows.push_back(d);
    }
  }
  logical_.free(logical, owner);  // validates ownership and double frees before changing anything
  device_.free(rows, owner);
  for (int64_t l : logical) mapping_[static_cast<size_t>(l)] = 0;
}

std::vector<int64_t> HiSparseTokenToKVPoolAllocator::mapped_indices() const {
  std::vector<int64_t> out;
  for (size_t l = 0; l < mapping_.size(); ++l) {
    if (mapping_[l] != 0) out.push_back(static_cast<int64_t>(l));
  }
  return out;
}

void HiSparseTokenToKVPoolAllocator::check_invariants() const {
  logical_.check_invariants();
  device_.check_invariants();
  std::vector<uint8_t> used(static_cast<size_t>(device_.index_limit()), 0);
  for (size_t l = 0; l < mapping_.size(); ++l) {
    const int64_t d = mapping_[l];
    if (d == 0) continue;
    const Owner lo = logical_.owner_of(static_cast<int64_t>(l));
    if (lo == kNoOwner) throw_error("HiSparse mapping invariant: free logical index {} maps to {}", l, d);
    if (device_.owner_of(d) != lo) {
      throw_error("HiSparse mapping invariant: logical {} (owner {}) maps to device {} owned by {}", l, lo, d,
                  device_.owner_of(d));
    }
    if (used[static_cast<size_t>(d)]) throw_error("HiSparse mapping invariant: device row {} mapped twice", d);
    used[static_cast<size_t>(d)] = 1;
  }
}

}  // namespace hisparse::cpu_ref
