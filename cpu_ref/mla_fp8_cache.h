// @brief FlashMLA's fp8 KV-cache row for DeepSeek-V3.2 (`FP8KVCacheLayout.V32_FP8Sparse`, the layout SGLang's NSA
// backend hands flash_mla_with_kvcache), dequantized exactly, so the float64 attention reference
// (cpu_ref/sparse_attention.h) can check the fp8 decode kernel.
#pragma once

#include <cstdint>
#include <vector>

namespace hisparse::cpu_ref {

/// One 656-byte row: the 512 latent ("nope") dims as E4M3 codes, four fp32 scales (one per 128-dim tile: value = code
/// × scale), then the 64 rope dims as bf16, all little-endian (FlashMLA tests/quant.py, quantize_k_cache).
constexpr int32_t kMlaFp8NopeDims = 512, kMlaFp8Tile = 128, kMlaFp8Tiles = 4, kMlaFp8RopeDims = 64;
constexpr int32_t kMlaFp8ScaleOffset = kMlaFp8NopeDims;                               // 512
constexpr int32_t kMlaFp8RopeOffset = kMlaFp8ScaleOffset + 4 * kMlaFp8Tiles;         // 528
constexpr int32_t kMlaFp8RowBytes = kMlaFp8RopeOffset + 2 * kMlaFp8RopeDims;         // 656

/// rows × 656 bytes → rows × 576 doubles: code × scale is exact in double (4 + 24 significand bits), bf16 exact.
/// Throws hisparse::Error when the bytes are not a whole number of rows.
std::vector<double> dequantize_mla_fp8_rows(const uint8_t* bytes, int64_t byte_count);

}  // namespace hisparse::cpu_ref
