// @brief TopkArgs: top-k selection over fp32 score rows, and the total order that makes it integer-exact.
//
// Order: position i beats position j when key(score_i) > key(score_j), or the keys are equal and i < j, where
// key() (topk_key below) orders all floats numerically with -0 == +0 and every NaN below -inf. The output row holds
// the K winners in ascending position order; a row with n < K valid positions returns 0..n-1 then -1 padding.
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"

namespace hisparse {

struct TopkArgs {
  int32_t rows = 0;                 // R
  int64_t stride = 0;               // row stride of `scores` (>= every length)
  int32_t k = 0;                    // K (1 .. 4096)
  const float* scores = nullptr;    // [R][stride]
  const int32_t* length = nullptr;  // [R] valid positions of each row (0 .. stride)
  int32_t* out = nullptr;           // [R][K] positions, ascending, -1 padded
};

constexpr int32_t kTopkMaxK = 4096;

void check_topk_args(const TopkArgs& args);
/// Reads `length` (host pointer).
void check_topk_lengths(const TopkArgs& args);

namespace num {
/// Monotone map float → uint32: larger score, larger key. -0 maps like +0; every NaN maps to 0 (the lowest);
/// no float other than NaN maps to 0.
HS_HOST_DEVICE uint32_t topk_key(float s) {
  if (s != s) return 0u;
  uint32_t u = float_bits(s);
  if (u == 0x80000000u) u = 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
}  // namespace num

}  // namespace hisparse
