// @brief Float64 reference of the block-scaled fp8 GEMM that DeepGEMM runs for DeepSeek's linear layers and routed
// experts (`fp8_gemm_nt`, `m_grouped_fp8_gemm_nt_masked`): D = A · Bᵀ with E4M3 operands, A scaled per (row, k block),
// B per (n block, k block). `hisparse validate --engine-record` checks DeepGEMM's outputs against it
// (docs/numerics.md, "The engine's kernels against the CPU reference").
#pragma once

#include <cstdint>
#include <vector>

#include "core/numerics/fp8.h"

namespace hisparse::cpu_ref {

/// DeepGEMM's scale granularity: A per token and 128 k, B per 128 × 128 block (DeepSeek-V3's fp8 recipe).
constexpr int32_t kGemmScaleBlock = 128;

/// Row-major host views. kb = ceil(k / block_k) k blocks, nb = ceil(n / block_n) n blocks.
struct BlockScaledGemmArgs {
  int64_t m = 0, n = 0, k = 0;
  int32_t block_k = kGemmScaleBlock;  // k extent of one scale (A and B)
  int32_t block_n = kGemmScaleBlock;  // n extent of one B scale
  const num::Fp8Bits* a = nullptr;    // [m][k] E4M3
  const float* sfa = nullptr;         // [m][kb]
  const num::Fp8Bits* b = nullptr;    // [n][k] E4M3 (the "nt" layout: both operands k-major)
  const float* sfb = nullptr;         // [nb][kb]
};

/// D[i][j] = Σ_kb (sfa[i][kb] · sfb[j / block_n][kb]) · Σ_{k in block kb} a[i][k] · b[j][k], in float64, in a fixed
/// order: k ascending inside a block, blocks ascending. The block sums are exact (E4M3 products are multiples of 2^-18
/// below 2^18, so a sum of up to 2^25 / 2^18 = 128 of them needs at most 43 significand bits; block_k ≤ 128 is
/// required for that claim), sfa · sfb is exact (24 + 24 bits), and only the scaled outer sum rounds, at double
/// precision: |D − exact| ≤ kb · 2^-52 · Σ_kb |scaled block sum|, far below bf16's 2^-9. A NaN code or scale gives NaN.
/// Throws hisparse::Error naming the field on a null view, a non-positive size or block, or block_k > 128.
std::vector<double> block_scaled_gemm_f64(const BlockScaledGemmArgs& args);

}  // namespace hisparse::cpu_ref
