// @brief IndexerArgs: DeepSeek-V3.2 lightning-indexer scoring as a plain view, and its fixed reduction orders
// (bf16 q and keys; fp8 E4M3 q and keys with one fp32 scale per key row, as DeepSeek-V3.2 is served).
//
// bf16 (IndexerDtype::kBf16): score[t][s] = sum over h = 0..63 (ascending) of w[t][h] * relu(q[t][h] . key[s]):
//   dot_h  = fma chain over d = 0..127 ascending, from +0, of bf16 q and key values (exact in fp32)
//   r_h    = dot_h > 0 ? dot_h : +0                 (so -0 and NaN become +0)
//   acc    = fma(w[t][h], r_h, acc), from +0, h ascending
//   score  = acc
// fp8 (IndexerDtype::kFp8E4m3): score[t][s] = key_scale[s] * sum over h of w[t][h] * relu(q8[t][h] . key8[s]):
//   dot_h  = fma chain over d = 0..127 ascending, from +0, of fp8 q and key values decoded exactly
//            (core/numerics/fp8.h; every product is exact in fp32)
//   r_h    = as above (a NaN code makes its head's dot NaN, so that head contributes +0)
//   acc    = as above
//   score  = canonicalize(acc * key_scale[s])       (one rounding; any NaN becomes 0x7fc00000)
//   The key row's scale multiplies the head sum, outside the ReLU, as DeepSeek's fp8_index and DeepGEMM's
//   fp8_(paged_)mqa_logits do; the query's per-(token, head) quantisation scale is not an input: the caller folds
//   it into w[t][h] together with the head and softmax scales (DeepSeek-V3.2 inference/model.py `Indexer`,
//   SGLang nsa_indexer `_get_logits_head_gate`). Sources and rationale: docs/numerics.md.
// Either way, positions s >= seq_len[t] (up to the row stride) are written as -inf so top-k never picks them.
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"
#include "core/numerics/fp8.h"
#include "core/numerics/scalar_ops.h"

namespace hisparse {

constexpr int kIndexerHeads = 64;
constexpr int kIndexerDim = 128;

/// The element type of q and of the keys (both sides of the dot product share it, as in the served model).
enum class IndexerDtype : int32_t {
  kBf16 = 0,      // q, keys
  kFp8E4m3 = 1,   // q_fp8, keys_fp8 and key_scale
};
const char* indexer_dtype_name(IndexerDtype dtype);

struct IndexerArgs {
  int32_t tokens = 0;                     // T
  int64_t max_len = 0;                    // row stride of `scores` (>= every seq_len)
  const num::Bf16Bits* q = nullptr;       // bf16: [T][64][128]
  const float* weights = nullptr;         // [T][64] per-head weights (head and softmax scales folded in; fp8: the
                                          // query's per-head quantisation scale too)
  const num::Bf16Bits* keys = nullptr;    // bf16: [key_rows][128] index keys of every position of every request
  int64_t key_rows = 0;
  const int64_t* key_start = nullptr;     // [T] row of position 0 of token t's request in the key rows
  const int32_t* seq_len = nullptr;       // [T] positions to score (0 .. max_len)
  float* scores = nullptr;                // [T][max_len] fp32
  // The dtype and the fp8 inputs (SGLang keeps a page of 64 keys as 64 × 128 fp8 bytes then 64 fp32 scales;
  // here the codes and the scales are two arrays of the same rows).
  IndexerDtype dtype = IndexerDtype::kBf16;
  const num::Fp8Bits* q_fp8 = nullptr;    // fp8: [T][64][128] E4M3 codes
  const num::Fp8Bits* keys_fp8 = nullptr; // fp8: [key_rows][128] E4M3 codes
  const float* key_scale = nullptr;       // fp8: [key_rows] dequantisation scale of each key row
};

void check_indexer_args(const IndexerArgs& args);
/// Reads key_start/seq_len (host pointers): every scored row must lie inside the key rows.
void check_indexer_ranges(const IndexerArgs& args);

namespace num {
HS_HOST_DEVICE float indexer_relu(float x) { return x > 0.0f ? x : 0.0f; }

/// The fp8 score of one position, in the order above. `q` holds the token's 64 × 128 decoded query values
/// (head-major), `w` its 64 weights, `k` the position's 128 decoded key values. Both backends call this one
/// function, so their chains of operations are the same by construction.
HS_HOST_DEVICE float indexer_fp8_score(const float* q, const float* w, const float* k, float key_scale) {
  float acc = 0.0f;
  for (int h = 0; h < kIndexerHeads; ++h) {
    const float* qh = q + h * kIndexerDim;
    float dot = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int d = 0; d < kIndexerDim; ++d) dot = hs_fma(qh[d], k[d], dot);
    acc = hs_fma(w[h], indexer_relu(dot), acc);
  }
  return canonicalize_f32(acc * key_scale);
}
}  // namespace num

}  // namespace hisparse
