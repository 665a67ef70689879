// @brief MambaPool, HybridReqToTokenPool and HybridLinearKVPool: slot free lists, the request → Mamba-slot map and
// the layer → KV-buffer map, every misuse an error naming the pool.
#include "cpu_ref/memory/mamba_pools.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "cpu_ref/memory/allocator_common.h"

namespace hisparse::cpu_ref {

MambaPool::MambaPool(int64_t size, int64_t num_linear_layers, int64_t conv_state_bytes, int64_t ssm_state_bytes)
    : size_(size),
      num_linear_layers_(num_linear_layers),
      conv_state_bytes_(conv_state_bytes),
      ssm_state_bytes_(ssm_state_bytes) {
  if (size <= 0 || num_linear_layers <= 0 || conv_state_bytes < 0 || ssm_state_bytes <= 0)
    throw_error("MambaPool: size {}, linear layers {}, conv state {} B, ssm state {} B: size, layers and the ssm "
                "state must be positive, the conv state non-negative",
                size, num_linear_layers, conv_state_bytes, ssm_state_bytes);
  in_use_.assign(static_cast<size_t>(size), 0);
  for (int64_t i = 0; i < size; ++i) free_slots_.push_back(i);
}

std::vector<int64_t> MambaPool::alloc(int64_t count) {
  if (count <= 0) throw_error("MambaPool::alloc: count {} must be positive", count);
  if (count > available_size())
    throw OutOfMemoryError("MambaPool (Mamba state slots; lower max running requests or raise the Mamba share)", count,
                           available_size(), 0);
  std::vector<int64_t> out(free_slots_.begin(), free_slots_.begin() + count);
  free_slots_.erase(free_slots_.begin(), free_slots_.begin() + count);
  for (int64_t s : out) in_use_[static_cast<size_t>(s)] = 1;
  return out;
}

void MambaPool::check_slot(int64_t slot, const char* what) const {
  if (slot < 0 || slot >= size_) throw_error("MambaPool::{}: slot {} out of range [0, {})", what, slot, size_);
  if (!in_use_[static_cast<size_t>(slot)]) throw_error("MambaPool::{}: slot {} is not in use", what, slot);
}

void MambaPool::free(int64_t slot) {
  check_slot(slot, "free");
  in_use_[static_cast<size_t>(slot)] = 0;
  free_slots_.push_back(slot);
}

bool MambaPool::in_use(int64_t slot) const {
  return slot >= 0 && slot < size_ && in_use_[static_cast<size_t>(slot)] != 0;
}

HybridReqToTokenPool::HybridReqToTokenPool(int64_t size, int64_t max_context_len, MambaPool mamba)
    : req_to_token_(size, max_context_len), mamba_(std::move(mamba)) {
  req_to_mamba_.assign(static_cast<size_t>(size), -1);
}

std::vector<int64_t> HybridReqToTokenPool::alloc(int64_t count) {
  if (count <= 0) throw_error("HybridReqToTokenPool::alloc: count {} must be positive", count);
  // Check both pools first so a short one leaves the other untouched.
  if (count > mamba_.available_size())
    throw OutOfMemoryError("HybridReqToTokenPool (Mamba state slots)", count, mamba_.available_size(), 0);
  std::vector<int64_t> reqs = req_to_token_.alloc(count);
  const std::vector<int64_t> states = mamba_.alloc(count);
  for (size_t i = 0; i < reqs.size(); ++i) req_to_mamba_[static_cast<size_t>(reqs[i])] = states[i];
  return reqs;
}

int64_t HybridReqToTokenPool::mamba_index(int64_t req) const {
  if (!req_to_token_.in_use(req))
    throw_error("HybridReqToTokenPool::mamba_index: request slot {} is not in use", req);
  return req_to_mamba_[static_cast<size_t>(req)];
}

void HybridReqToTokenPool::free(int64_t req) {
  const int64_t state = mamba_index(req);
  req_to_token_.free(req);
  mamba_.free(state);
  req_to_mamba_[static_cast<size_t>(req)] = -1;
}

HybridLinearKVPool::HybridLinearKVPool(int64_t size, const std::vector<bool>& full_attention, int64_t kv_row_bytes)
    : size_(size), kv_row_bytes_(kv_row_bytes) {
  for (size_t i = 0; i < full_attention.size(); ++i) {
    layer_to_kv_.push_back(full_attention[i] ? static_cast<int64_t>(full_layer_ids_.size()) : -1);
    if (full_attention[i]) full_layer_ids_.push_back(static_cast<int64_t>(i));
  }
  if (size <= 0 || kv_row_bytes <= 0 || full_layer_ids_.empty())
    throw_error("HybridLinearKVPool: size {}, kv row {} B, {} full-attention layers of {}: all must be positive",
                size, kv_row_bytes, full_layer_ids_.size(), full_attention.size());
}

int64_t HybridLinearKVPool::kv_layer_index(int64_t layer_id) const {
  if (layer_id < 0 || layer_id >= static_cast<int64_t>(layer_to_kv_.size()))
    throw_error("HybridLinearKVPool: layer {} out of range [0, {})", layer_id, layer_to_kv_.size());
  const int64_t k = layer_to_kv_[static_cast<size_t>(layer_id)];
  if (k < 0)
    throw_error("HybridLinearKVPool: layer {} is a linear-attention layer: it keeps a Mamba state, not KV",
                layer_id);
  return k;
}

}  // namespace hisparse::cpu_ref
