// @brief The pools of a hybrid attention + linear-attention (Mamba-style) model, as SGLang keeps them
// (mem_cache/memory_pool.py): MambaPool (one conv + SSM state per request slot for every linear layer),
// HybridReqToTokenPool (request slots plus the request → Mamba-slot map) and HybridLinearKVPool (a KV cache for the
// full-attention layers only). HiSparse's offload concerns the last one alone: a Mamba state is a fixed per-request
// block with no tokens to select.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_ref/memory/req_to_token_pool.h"

namespace hisparse::cpu_ref {

/// `size` state slots; each holds, for every linear layer, a conv state of conv_state_bytes and an SSM (temporal)
/// state of ssm_state_bytes. Slots come from the front of a free list and return to its back, as SGLang's.
class MambaPool {
 public:
  MambaPool(int64_t size, int64_t num_linear_layers, int64_t conv_state_bytes, int64_t ssm_state_bytes);

  int64_t size() const { return size_; }
  int64_t available_size() const { return static_cast<int64_t>(free_slots_.size()); }
  /// Bytes one slot holds over every linear layer: layers × (conv + ssm).
  int64_t bytes_per_slot() const { return num_linear_layers_ * (conv_state_bytes_ + ssm_state_bytes_); }
  int64_t total_bytes() const { return size_ * bytes_per_slot(); }

  /// Takes `count` slots; throws OutOfMemoryError (nothing taken) when fewer are free.
  std::vector<int64_t> alloc(int64_t count);
  /// Returns a slot; throws on one out of range or not in use.
  void free(int64_t slot);
  bool in_use(int64_t slot) const;

 private:
  void check_slot(int64_t slot, const char* what) const;

  int64_t size_, num_linear_layers_, conv_state_bytes_, ssm_state_bytes_;
  std::vector<int64_t> free_slots_;
  std::vector<uint8_t> in_use_;
};

/// Request slots (ReqToTokenPool) with one Mamba slot each: alloc takes both or neither, free returns both.
class HybridReqToTokenPool {
 public:
  HybridReqToTokenPool(int64_t size, int64_t max_context_len, MambaPool mamba);

  /// Takes `count` request slots and a Mamba slot for each; throws OutOfMemoryError (nothing taken) when either
  /// pool is short.
  std::vector<int64_t> alloc(int64_t count);
  /// Frees the request slot and the Mamba slot mapped to it.
  void free(int64_t req);
  /// The Mamba slot of request slot `req` (throws when the slot is not in use).
  int64_t mamba_index(int64_t req) const;

  const ReqToTokenPool& req_to_token() const { return req_to_token_; }
  ReqToTokenPool& req_to_token() { return req_to_token_; }
  const MambaPool& mamba() const { return mamba_; }
  int64_t available_size() const { return std::min(req_to_token_.available_size(), mamba_.available_size()); }

 private:
  ReqToTokenPool req_to_token_;
  MambaPool mamba_;
  std::vector<int64_t> req_to_mamba_;  // [size], -1 = no Mamba slot
};

/// The KV cache of a hybrid model: `size` tokens of K + V for the full-attention layers only. Layer ids are the
/// model's; a linear layer has no KV here.
class HybridLinearKVPool {
 public:
  /// full_attention[i]: decoder layer i is a full-attention layer (else linear attention).
  HybridLinearKVPool(int64_t size, const std::vector<bool>& full_attention, int64_t kv_row_bytes);

  int64_t size() const { return size_; }
  int64_t kv_layer_count() const { return static_cast<int64_t>(full_layer_ids_.size()); }
  /// The KV-buffer index of model layer `layer_id`; throws for a linear layer or one out of range.
  int64_t kv_layer_index(int64_t layer_id) const;
  /// size × full-attention layers × kv_row_bytes.
  int64_t total_bytes() const { return size_ * kv_layer_count() * kv_row_bytes_; }

 private:
  int64_t size_, kv_row_bytes_;
  std::vector<int64_t> layer_to_kv_;    // [layers], -1 = linear layer
  std::vector<int64_t> full_layer_ids_;
};

}  // namespace hisparse::cpu_ref
