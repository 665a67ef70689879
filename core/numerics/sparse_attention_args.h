// @brief SparseAttentionArgs: the sparse MLA decode attention operation as a plain view (host or device pointers).
// Shapes follow SGLang's bf16 DSA decode path (FlashMLA sparse decode): one latent KV head shared by all q heads.
#pragma once

#include <cstdint>

#include "core/numerics/bf16.h"

namespace hisparse {

constexpr int kMlaQkDim = 576;  // 512 latent + 64 rope
constexpr int kMlaVDim = 512;   // the latent part doubles as V
/// Head counts both backends support (DeepSeek-V3.2 at TP 1 / TP 2 of 128 heads). Listed once, here.
constexpr int kAttentionHeads[] = {64, 128};
inline bool attention_heads_supported(int heads) {
  for (int h : kAttentionHeads)
    if (h == heads) return true;
  return false;
}

/// The same struct is filled with host pointers by cpu_ref and by `hisparse validate`, and with device pointers by
/// the CUDA launchers, so index math is written once.
struct SparseAttentionArgs {
  int32_t tokens = 0;                   // T (decode tokens, one per request)
  int32_t heads = 0;                    // H, 64 or 128
  int32_t top_k = 0;                    // K, entries per index row (any K >= 1)
  int64_t slots = 0;                    // rows of the KV buffer
  float sm_scale = 0.0f;                // softmax scale applied to q.k (usually 1/sqrt(192) in DeepSeek-V3)
  const num::Bf16Bits* q = nullptr;     // [T][H][576]
  const num::Bf16Bits* kv = nullptr;    // [slots][576]; [0,512) is also V
  const int32_t* indices = nullptr;     // [T][K] slot per entry; -1 = skip (any entry outside [0, slots) is skipped)
  num::Bf16Bits* out = nullptr;         // [T][H][512]
  float* lse = nullptr;                 // [T][H] natural-log log-sum-exp of sm_scale * q.k
};

/// Shape checks shared by every backend (host-side, no data access): throws hisparse::Error naming the field.
void check_sparse_attention_args(const SparseAttentionArgs& args);

/// Host-side check that every index is -1 or in [0, slots) (reads args.indices: host pointers only).
void check_sparse_attention_indices(const SparseAttentionArgs& args);

/// Floating-point operations of one call counted the usual way (2 per multiply-add, QK and PV, skipped entries
/// included), as FlashMLA reports them.
inline double sparse_attention_flops(int64_t tokens, int64_t heads, int64_t top_k) {
  return 2.0 * double(tokens) * double(heads) * double(top_k) * double(kMlaQkDim + kMlaVDim);
}

}  // namespace hisparse
