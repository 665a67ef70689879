// @brief HiSparseCoordinator: admission (staged / direct), page-by-page buffer growth, eager backup, teardown.
#include "cpu_ref/memory/hisparse_coordinator.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::cpu_ref {

HiSparseCoordinator::HiSparseCoordinator(ReqToTokenPool& req_to_token, HiSparseTokenToKVPoolAllocator& allocator,
                                         HostPool& host, int64_t device_buffer_size)
    : req_to_token_(req_to_token),
      allocator_(allocator),
      host_(host),
      H_(device_buffer_size),
      page_size_(allocator.page_size()) {
  // A page-multiple H keeps every capacity (and H + page) a whole number of pages, which the paged device
  // allocator needs; SGLang's defaults (H = 2 × 2048, page 64) satisfy it.
  if (H_ <= 0 || H_ % page_size_ != 0) {
    throw_error("HiSparseCoordinator: device_buffer_size {} must be a positive multiple of page_size {}", H_,
                page_size_);
  }
  if (host.page_size() != page_size_) {
    throw_error("HiSparseCoordinator: host pool page_size {} differs from the allocator's {}", host.page_size(),
                page_size_);
  }
  if (host.max_requests() != req_to_token.size() || host.max_context_len() < req_to_token.max_context_len()) {
    throw_error("HiSparseCoordinator: host pool rows ({} × {}) do not cover the request pool ({} × {})",
                host.max_requests(), host.max_context_len(), req_to_token.size(), req_to_token.max_context_len());
  }
  requests_.resize(static_cast<size_t>(req_to_token.size()));
}

int64_t HiSparseCoordinator::capacity_for(int64_t n) const {
  if (n <= 0) return 0;
  const int64_t cap = std::min((n + page_size_ - 1) / page_size_ * page_size_, H_);
  return cap == H_ ? H_ + page_size_ : cap;
}

HiSparseCoordinator::RequestState& HiSparseCoordinator::state(int64_t req, const char* what) {
  return const_cast<RequestState&>(static_cast<const HiSparseCoordinator*>(this)->state(req, what));
}

const HiSparseCoordinator::RequestState& HiSparseCoordinator::state(int64_t req, const char* what) const {
  if (req < 0 || req >= static_cast<int64_t>(requests_.size()) || !requests_[static_cast<size_t>(req)].active) {
    throw_error("HiSparseCoordinator::{}: request slot {} is not active", what, req);
  }
  return requests_[static_cast<size_t>(req)];
}

bool HiSparseCoordinator::active(int64_t req) const {
  return req >= 0 && req < static_cast<int64_t>(requests_.size()) && requests_[static_cast<size_t>(req)].active;
}
bool HiSparseCoordinator::admitted(int64_t req) const { return state(req, "admitted").admitted; }
int64_t HiSparseCoordinator::seq_len(int64_t req) const { return state(req, "seq_len").seq_len; }
const std::vector<int64_t>& HiSparseCoordinator::buffer(int64_t req) const { return state(req, "buffer").buffer; }
const std::vector<int32_t>& HiSparseCoordinator::slot_token(int64_t req) const {
  return state(req, "slot_token").slot_token;
}

int64_t HiSparseCoordinator::add_request() {
  const int64_t req = req_to_token_.alloc_one();
  requests_[static_cast<size_t>(req)] = RequestState{};
  requests_[static_cast<size_t>(req)].active = true;
  return req;
}

std::vector<int64_t> HiSparseCoordinator::do_extend(int64_t req, int64_t tokens, bool logical_only) {
  RequestState& s = state(req, "extend");
  if (s.admitted) throw_error("HiSparseCoordinator::extend: request {} is already admitted (decode only)", req);
  if (s.seq_len > 0 && s.logical_only != logical_only) {
    throw_error("HiSparseCoordinator::extend: request {} mixes device and logical-only extends", req);
  }
  if (tokens <= 0 || s.seq_len + tokens > req_to_token_.max_context_len()) {
    throw_error("HiSparseCoordinator::extend: request {} cannot grow from {} by {} tokens (max context {})", req,
                s.seq_len, tokens, req_to_token_.max_context_len());
  }
  const int64_t prefix = s.seq_len;
  const ExtendRequest r{prefix, prefix + tokens, prefix > 0 ? req_to_token_.at(req, prefix - 1) : -1, req};
  std::vector<int64_t> locs = logical_only ? allocator_.alloc_logical_only({r}) : allocator_.alloc_extend({r});
  req_to_token_.write(req, prefix, locs);
  s.seq_len = prefix + tokens;
  s.logical_only = logical_only;
  return locs;
}

std::vector<int64_t> HiSparseCoordinator::extend(int64_t req, int64_t tokens) { return do_extend(req, tokens, false); }
std::vector<int64_t> HiSparseCoordinator::extend_logical_only(int64_t req, int64_t tokens) {
  return do_extend(req, tokens, true);
}

AdmitPlan HiSparseCoordinator::admit_staged(int64_t req) {
  RequestState& s = state(req, "admit_staged");
  if (s.admitted || s.logical_only || s.seq_len == 0) {
    throw_error("HiSparseCoordinator::admit_staged: request {} must be prefilled on the device and not admitted",
                req);
  }
  const int64_t n = s.seq_len;
  const int64_t host_pages = host_.pages_needed(req, 0, n);
  if (host_pages * page_size_ > host_.available_size()) {
    throw OutOfMemoryError("HiSparseCoordinator::admit_staged (host pool)", host_pages * page_size_,
                           host_.available_size(), 0);
  }
  const std::vector<int64_t> logical = req_to_token_.read(req, 0, n);
  AdmitPlan plan;
  plan.backup.device.reserve(static_cast<size_t>(n));
  for (int64_t l : logical) plan.backup.device.push_back(allocator_.translate(l));
  // The staging copy reads the prefill rows before the buffer takes them over (SGLang waits for it to finish).
  s.buffer = allocator_.alloc_device_buffer(logical, capacity_for(n), req);
  plan.backup.host = host_.assign(req, 0, n);
  s.slot_token.resize(static_cast<size_t>(H_));
  for (int64_t i = 0; i < H_; ++i) s.slot_token[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  s.admitted = true;
  s.skip_first_backup = true;
  plan.initial = InitialState::kIdentity;
  return plan;
}

AdmitPlan HiSparseCoordinator::admit_direct(int64_t req) {
  RequestState& s = state(req, "admit_direct");
  if (s.admitted || !s.logical_only || s.seq_len == 0) {
    throw_error("HiSparseCoordinator::admit_direct: request {} must be extended logical-only and not admitted",
                req);
  }
  const int64_t n = s.seq_len;
  const int64_t host_pages = host_.pages_needed(req, 0, n);
  if (host_pages * page_size_ > host_.available_size()) {
    throw OutOfMemoryError("HiSparseCoordinator::admit_direct (host pool)", host_pages * page_size_,
                           host_.available_size(), 0);
  }
  const std::vector<int64_t> logical = req_to_token_.read(req, 0, n);
  s.buffer = allocator_.alloc_device_buffer(logical, capacity_for(n), req);
  AdmitPlan plan;
  // The KV arrives in the host pool (RDMA in SGLang); here the rows are assigned as that transfer would.
  const std::vector<int64_t> host_rows = host_.assign(req, 0, n);
  s.slot_token.assign(static_cast<size_t>(H_), -1);
  if (n <= H_) {
    // The fast path reads slot t for token t without loading, so every token must be preloaded.
    plan.preload.host = host_rows;
    plan.preload.device.assign(s.buffer.begin(), s.buffer.begin() + n);
    for (int64_t i = 0; i < H_; ++i) s.slot_token[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    plan.initial = InitialState::kIdentity;
  } else {
    plan.initial = InitialState::kEmpty;
  }
  s.admitted = true;
  s.skip_first_backup = true;
  return plan;
}

DecodePlan HiSparseCoordinator::decode(int64_t req) {
  RequestState& s = state(req, "decode");
  if (!s.admitted) throw_error("HiSparseCoordinator::decode: request {} is not admitted", req);
  const int64_t n = s.seq_len + 1;  // n-1 is the new token, n-2 the previous one
  if (n > req_to_token_.max_context_len()) {
    throw_error("HiSparseCoordinator::decode: request {} would exceed max context {}", req,
                req_to_token_.max_context_len());
  }
  // Check all three pools before touching any.
  if ((n - 1) % page_size_ == 0 && allocator_.logical().available_size() < page_size_) {
    throw OutOfMemoryError("HiSparseCoordinator::decode (logical pool)", 1, allocator_.logical().available_size(), 0);
  }
  if (!s.skip_first_backup && host_.pages_needed(req, n - 2, 1) * page_size_ > host_.available_size()) {
    throw OutOfMemoryError("HiSparseCoordinator::decode (host pool, eager backup)", 1, host_.available_size(), 0);
  }
  const auto cap = static_cast<int64_t>(s.buffer.size());
  const int64_t grow = (n <= H_ && n > cap) ? capacity_for(n) - cap : 0;
  if (grow > allocator_.device().available_size()) {
    throw OutOfMemoryError("HiSparseCoordinator::decode (device buffer growth)", grow,
                           allocator_.device().available_size(), 0);
  }

  DecodePlan plan;
  if (s.skip_first_backup) {
    s.skip_first_backup = false;  // admission already copied every token to the host
  } else {
    plan.backup.host = host_.assign(req, n - 2, 1);
    plan.backup.device.push_back(s.buffer[static_cast<size_t>(std::min(n - 2, H_))]);
  }
  const int64_t prev_logical = req_to_token_.at(req, n - 2);
  plan.logical_loc = allocator_.alloc_decode({DecodeRequest{n, prev_logical, req}}).front();
  req_to_token_.write(req, n - 1, &plan.logical_loc, 1);
  if (grow > 0) {
    const std::vector<int64_t> rows = allocator_.device().alloc(grow, req);
    s.buffer.insert(s.buffer.end(), rows.begin(), rows.end());
    plan.grown_slots = grow;
  }
  const int64_t slot = std::min(n - 1, H_);
  plan.device_loc = s.buffer[static_cast<size_t>(slot)];
  // SGLang's CUDA path leaves the previous newest token mapped to the reserved row (harmless there); we clear it
  // so that no device row is ever mapped twice.
  if (slot == H_ && allocator_.translate(prev_logical) == plan.device_loc) allocator_.clear_mapping(prev_logical);
  allocator_.set_mapping(plan.logical_loc, plan.device_loc);
  s.seq_len = n;
  return plan;
}

void HiSparseCoordinator::finish(int64_t req) {
  RequestState& s = state(req, "finish");
  const std::vector<int64_t> logical =
      s.seq_len > 0 ? req_to_token_.read(req, 0, s.seq_len) : std::vector<int64_t>{};
  if (s.admitted) {
    // Buffer rows first, then the mapping that may point at them, then the logical indices (SGLang's order).
    allocator_.free_hisparse_indices(s.buffer, req);
    for (int64_t l : logical) allocator_.clear_mapping(l);
  }
  allocator_.free(logical, req);  // before admission this also frees the prefill's device rows
  host_.free_request(req);
  req_to_token_.free(req);
  requests_[static_cast<size_t>(req)] = RequestState{};
}

std::vector<std::string> HiSparseCoordinator::leaks() const {
  std::vector<std::string> out;
  for (int64_t r : req_to_token_.slots_in_use()) out.push_back(fmt::format("request slot {} still in use", r));
  for (const auto& [i, o] : allocator_.logical().owned_indices()) {
    out.push_back(fmt::format("logical index {} still held by {}", i, o));
  }
  for (const auto& [i, o] : allocator_.device().owned_indices()) {
    out.push_back(fmt::format("device row {} still held by {}", i, o));
  }
  for (int64_t l : allocator_.mapped_indices()) out.push_back(fmt::format("logical index {} still mapped", l));
  for (const auto& [p, o] : host_.owned_pages()) out.push_back(fmt::format("host page {} still held by {}", p, o));
  return out;
}

void HiSparseCoordinator::check_invariants() const {
  allocator_.check_invariants();
  host_.check_invariants();
  int64_t logical_total = 0;
  int64_t device_total = 0;
  for (size_t r = 0; r < requests_.size(); ++r) {
    const RequestState& s = requests_[r];
    const auto req = static_cast<int64_t>(r);
    if (!s.active) continue;
    logical_total += s.seq_len;
    for (int64_t pos = 0; pos < s.seq_len; ++pos) {
      if (allocator_.logical().owner_of(req_to_token_.at(req, pos)) != req) {
        throw_error("HiSparseCoordinator invariant: token {} of request {} is not held by it", pos, req);
      }
    }
    if (!s.admitted) {
      if (!s.buffer.empty()) throw_error("HiSparseCoordinator invariant: request {} has a buffer early", req);
      if (!s.logical_only) device_total += s.seq_len;
      continue;
    }
    if (static_cast<int64_t>(s.buffer.size()) != capacity_for(s.seq_len)) {
      throw_error("HiSparseCoordinator invariant: request {} of {} tokens has buffer {} (expected {})", req,
                  s.seq_len, s.buffer.size(), capacity_for(s.seq_len));
    }
    for (int64_t d : s.buffer) {
      if (allocator_.device().owner_of(d) != req) {
        throw_error("HiSparseCoordinator invariant: buffer row {} of request {} is not held by it", d, req);
      }
    }
    device_total += static_cast<int64_t>(s.buffer.size());
    const int64_t copies = s.skip_first_backup ? s.seq_len : s.seq_len - 1;
    for (int64_t pos = 0; pos < s.seq_len; ++pos) {
      if ((host_.host_loc(req, pos) >= 0) != (pos < copies)) {
        throw_error("HiSparseCoordinator invariant: request {} token {} host copy state wrong", req, pos);
      }
    }
  }
  if (logical_total != allocator_.logical().used_size() || device_total != allocator_.device().used_size()) {
    throw_error("HiSparseCoordinator invariant: tokens held logical {} / device {} but requests account {} / {}",
                allocator_.logical().used_size(), allocator_.device().used_size(), logical_total, device_total);
  }
}

}  // namespace hisparse::cpu_ref
