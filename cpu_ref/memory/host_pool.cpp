// @brief HostPool: page-granular host rows per request, req_to_host bookkeeping, addressing in three layouts.
#include "cpu_ref/memory/host_pool.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace hisparse::cpu_ref {

HostPool::HostPool(int64_t device_size, int64_t host_to_device_ratio, int64_t page_size, int64_t num_layers,
                   int64_t row_bytes, int64_t max_requests, int64_t max_context_len, bool backed,
                   HostLayout layout, int64_t heads)
    : max_requests_(max_requests), max_context_len_(max_context_len) {
  if (device_size <= 0 || host_to_device_ratio < 1 || page_size <= 0 || num_layers <= 0 || row_bytes <= 0 ||
      max_requests <= 0 || max_context_len <= 0) {
    throw_error("HostPool: device_size {}, host_to_device_ratio {}, page_size {}, num_layers {}, row_bytes {}, "
                "max_requests {}, max_context_len {}: all must be positive (ratio >= 1)",
                device_size, host_to_device_ratio, page_size, num_layers, row_bytes, max_requests, max_context_len);
  }
  if (heads < 1 || row_bytes % heads != 0)
    throw_error("HostPool: heads {} must be >= 1 and divide row_bytes {}", heads, row_bytes);
  if (layout != HostLayout::kPageHead && heads != 1)
    throw_error("HostPool: heads {} with layout {}: only page_head splits a row into heads", heads,
                host_layout_name(layout));
  const int64_t tokens = device_size * host_to_device_ratio;
  layout_ = HostPoolLayout{(tokens + page_size - 1) / page_size * page_size, page_size, num_layers, row_bytes, layout,
                           heads};
  for (int64_t p = 0; p < num_pages(); ++p) free_pages_.push_back(p);
  page_owner_.assign(static_cast<size_t>(num_pages()), kNoOwner);
  req_to_host_.assign(static_cast<size_t>(max_requests * max_context_len), -1);
  req_pages_.resize(static_cast<size_t>(max_requests));
  if (backed) {
    if (layout_.total_bytes() > kMaxBackedBytes) {
      throw_error("HostPool: a backed pool of {} bytes exceeds the {} byte limit for real buffers",
                  layout_.total_bytes(), kMaxBackedBytes);
    }
    data_.assign(static_cast<size_t>(layout_.total_bytes()), 0);
  }
}

void HostPool::check_req(int64_t req, const char* what) const {
  if (req < 0 || req >= max_requests_) {
    throw_error("HostPool::{}: request slot {} out of range [0, {})", what, req, max_requests_);
  }
}

int64_t HostPool::pages_needed(int64_t req, int64_t start, int64_t count) const {
  check_req(req, "pages_needed");
  const int64_t have = allocated_len(req);
  const int64_t end = start + count;
  return end > have ? (end - have + page_size() - 1) / page_size() : 0;
}

std::vector<int64_t> HostPool::assign(int64_t req, int64_t start, int64_t count) {
  check_req(req, "assign");
  const int64_t have = allocated_len(req);
  if (count <= 0 || start < 0 || start + count > max_context_len_) {
    throw_error("HostPool::assign: positions [{}, {}) of request {} outside [0, {})", start, start + count, req,
                max_context_len_);
  }
  if (start > have) {
    throw_error("HostPool::assign: request {} would leave a hole: start {} is past its allocated length {}", req,
                start, have);
  }
  int64_t* row = req_to_host_.data() + req * max_context_len_;
  for (int64_t p = start; p < start + count; ++p) {
    if (p < have && row[p] >= 0) {
      throw_error("HostPool::assign: token {} of request {} already has host row {}", p, req, row[p]);
    }
  }
  const int64_t pages = pages_needed(req, start, count);
  if (pages > static_cast<int64_t>(free_pages_.size())) {
    throw OutOfMemoryError("HostPool::assign", pages * page_size(), available_size(), 0);
  }
  auto& mine = req_pages_[static_cast<size_t>(req)];
  for (int64_t k = 0; k < pages; ++k) {
    const int64_t page = free_pages_.front();
    free_pages_.pop_front();
    page_owner_[static_cast<size_t>(page)] = req;
    mine.push_back(page);
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t p = start; p < start + count; ++p) {
    row[p] = mine[static_cast<size_t>(p / page_size())] * page_size() + p % page_size();
    out.push_back(row[p]);
  }
  return out;
}

int64_t HostPool::free_request(int64_t req) {
  check_req(req, "free_request");
  auto& mine = req_pages_[static_cast<size_t>(req)];
  for (int64_t page : mine) {
    page_owner_[static_cast<size_t>(page)] = kNoOwner;
    free_pages_.push_back(page);
  }
  const auto n = static_cast<int64_t>(mine.size());
  std::fill_n(req_to_host_.begin() + req * max_context_len_, std::min(n * page_size(), max_context_len_), -1);
  mine.clear();
  return n;
}

int64_t HostPool::host_loc(int64_t req, int64_t pos) const {
  check_req(req, "host_loc");
  if (pos < 0 || pos >= max_context_len_) {
    throw_error("HostPool::host_loc: position {} outside [0, {})", pos, max_context_len_);
  }
  return req_to_host_[static_cast<size_t>(req * max_context_len_ + pos)];
}

const int64_t* HostPool::req_to_host(int64_t req) const {
  check_req(req, "req_to_host");
  return req_to_host_.data() + req * max_context_len_;
}

int64_t HostPool::allocated_len(int64_t req) const {
  check_req(req, "allocated_len");
  return static_cast<int64_t>(req_pages_[static_cast<size_t>(req)].size()) * page_size();
}

const std::vector<int64_t>& HostPool::pages_of(int64_t req) const {
  check_req(req, "pages_of");
  return req_pages_[static_cast<size_t>(req)];
}

Owner HostPool::page_owner(int64_t page) const {
  if (page < 0 || page >= num_pages()) throw_error("HostPool::page_owner: page {} out of range", page);
  return page_owner_[static_cast<size_t>(page)];
}

void HostPool::check_row(int64_t layer, int64_t loc, const char* what) const {
  if (layer < 0 || layer >= layout_.num_layers || loc < 0 || loc >= layout_.size) {
    throw_error("HostPool::{}: row (layer {}, loc {}) outside ({} layers, {} tokens)", what, layer, loc,
                layout_.num_layers, layout_.size);
  }
}

uint64_t HostPool::row_address(int64_t layer, int64_t loc) const {
  check_row(layer, loc, "row_address");
  const auto base = data_.empty() ? uint64_t{0} : reinterpret_cast<uint64_t>(data_.data());
  return base + static_cast<uint64_t>(layout_.row_offset(layer, loc));
}

void HostPool::write_row(int64_t layer, int64_t loc, const uint8_t* src) {
  check_row(layer, loc, "write_row");
  if (data_.empty()) throw_error("HostPool::write_row: the pool is not backed by a buffer");
  if (page_owner_[static_cast<size_t>(loc / page_size())] == kNoOwner) {
    throw_error("HostPool::write_row: host row {} lies in a free page", loc);
  }
  const int64_t chunk = layout_.row_bytes / layout_.heads;
  for (int64_t h = 0; h < layout_.heads; ++h)
    std::memcpy(data_.data() + layout_.chunk_offset(layer, loc, h), src + h * chunk, static_cast<size_t>(chunk));
}

void HostPool::read_row(int64_t layer, int64_t loc, uint8_t* dst) const {
  check_row(layer, loc, "read_row");
  if (data_.empty()) throw_error("HostPool::read_row: the pool is not backed by a buffer");
  if (page_owner_[static_cast<size_t>(loc / page_size())] == kNoOwner) {
    throw_error("HostPool::read_row: host row {} lies in a free page", loc);
  }
  const int64_t chunk = layout_.row_bytes / layout_.heads;
  for (int64_t h = 0; h < layout_.heads; ++h)
    std::memcpy(dst + h * chunk, data_.data() + layout_.chunk_offset(layer, loc, h), static_cast<size_t>(chunk));
}

std::vector<std::pair<int64_t, Owner>> HostPool::owned_pages() const {
  std::vector<std::pair<int64_t, Owner>> out;
  for (int64_t p = 0; p < num_pages(); ++p) {
    if (page_owner_[static_cast<size_t>(p)] != kNoOwner) out.emplace_back(p, page_owner_[static_cast<size_t>(p)]);
  }
  return out;
}

void HostPool::check_invariants() const {
  std::vector<uint8_t> seen(static_cast<size_t>(num_pages()), 0);
  for (int64_t p : free_pages_) {
    if (seen[static_cast<size_t>(p)] || page_owner_[static_cast<size_t>(p)] != kNoOwner) {
      throw_error("HostPool invariant: free page {} listed twice or owned", p);
    }
    seen[static_cast<size_t>(p)] = 1;
  }
  for (int64_t r = 0; r < max_requests_; ++r) {
    const auto& mine = req_pages_[static_cast<size_t>(r)];
    for (int64_t p : mine) {
      if (seen[static_cast<size_t>(p)] || page_owner_[static_cast<size_t>(p)] != r) {
        throw_error("HostPool invariant: page {} of request {} shared or owned by another", p, r);
      }
      seen[static_cast<size_t>(p)] = 1;
    }
    const int64_t* row = req_to_host_.data() + r * max_context_len_;
    for (int64_t pos = 0; pos < max_context_len_; ++pos) {
      if (row[pos] < 0) continue;
      const auto k = static_cast<size_t>(pos / page_size());
      if (k >= mine.size() || row[pos] != mine[k] * page_size() + pos % page_size()) {
        throw_error("HostPool invariant: request {} token {} has host row {} outside its pages", r, pos, row[pos]);
      }
    }
  }
  for (int64_t p = 0; p < num_pages(); ++p) {
    if (!seen[static_cast<size_t>(p)]) throw_error("HostPool invariant: page {} lost", p);
  }
}

}  // namespace hisparse::cpu_ref
