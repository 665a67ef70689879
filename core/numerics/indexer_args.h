// @brief IndexerArgs: DeepSeek-V3.2 lightning-indexer scoring as a plain view, and its fixed reduction order.
//
// score[t][s] = sum over h = 0..63 (ascending) of w[t][h] * relu(q[t][h] . key[s]), for s < seq_len[t]:
//   dot_h  = fma chain over d = 0..127 ascending, from +0, of bf16 q and key values (exact in fp32)
//   r_h    = dot_h > 0 ? dot_h : +0                 (so -0 and NaN become +0)
//   acc    = fma(w[t][h], r_h, acc), from +0, h ascending
// Positions s >= seq_len[t] (up to the row stride) are written as -inf so top-k never picks them.
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"
#include "core/numerics/scalar_ops.h"

namespace hisparse {

constexpr int kIndexerHeads = 64;
constexpr int kIndexerDim = 128;

struct IndexerArgs {
  int32_t tokens = 0;                     // T
  int64_t max_len = 0;                    // row stride of `scores` (>= every seq_len)
  const num::Bf16Bits* q = nullptr;       // [T][64][128]
  const float* weights = nullptr;         // [T][64] per-head weights (softmax scale and head scale folded in)
  const num::Bf16Bits* keys = nullptr;    // [key_rows][128] index keys of every position of every request
  int64_t key_rows = 0;
  const int64_t* key_start = nullptr;     // [T] row of position 0 of token t's request in `keys`
  const int32_t* seq_len = nullptr;       // [T] positions to score (0 .. max_len)
  float* scores = nullptr;                // [T][max_len] fp32
};

void check_indexer_args(const IndexerArgs& args);
/// Reads key_start/seq_len (host pointers): every scored row must lie inside `keys`.
void check_indexer_ranges(const IndexerArgs& args);

namespace num {
HS_HOST_DEVICE float indexer_relu(float x) { return x > 0.0f ? x : 0.0f; }
}  // namespace num

}  // namespace hisparse
