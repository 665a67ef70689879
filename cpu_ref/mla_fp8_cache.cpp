// @brief FlashMLA's V32 fp8 KV row dequantized exactly (mla_fp8_cache.h).
#include "cpu_ref/mla_fp8_cache.h"

#include <cstring>

#include "core/error.h"
#include "core/numerics/bf16.h"
#include "core/numerics/fp8.h"
#include "core/numerics/sparse_attention_args.h"

namespace hisparse::cpu_ref {

static_assert(kMlaFp8NopeDims + kMlaFp8RopeDims == kMlaQkDim, "a dequantized row is one MLA q.k row");

std::vector<double> dequantize_mla_fp8_rows(const uint8_t* bytes, int64_t byte_count) {
  if (byte_count < 0 || byte_count % kMlaFp8RowBytes != 0)
    throw_error("dequantize_mla_fp8_rows: {} bytes is not a whole number of {}-byte rows", byte_count, kMlaFp8RowBytes);
  const int64_t rows = byte_count / kMlaFp8RowBytes;
  std::vector<double> out(static_cast<size_t>(rows * kMlaQkDim));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = bytes + r * kMlaFp8RowBytes;
    double* o = out.data() + r * kMlaQkDim;
    for (int32_t tile = 0; tile < kMlaFp8Tiles; ++tile) {
      float scale;
      std::memcpy(&scale, row + kMlaFp8ScaleOffset + 4 * tile, 4);
      for (int32_t d = tile * kMlaFp8Tile; d < (tile + 1) * kMlaFp8Tile; ++d)
        o[d] = static_cast<double>(num::fp8_e4m3_to_float(row[d])) * static_cast<double>(scale);
    }
    for (int32_t d = 0; d < kMlaFp8RopeDims; ++d) {
      num::Bf16Bits b;
      std::memcpy(&b, row + kMlaFp8RopeOffset + 2 * d, 2);
      o[kMlaFp8NopeDims + d] = num::bf16_to_float(b);
    }
  }
  return out;
}

}  // namespace hisparse::cpu_ref
