// @brief The float64 block-scaled fp8 GEMM (block_scaled_gemm.h): exact block sums, one rounding per scaled block.
#include "cpu_ref/block_scaled_gemm.h"

#include "core/error.h"

namespace hisparse::cpu_ref {

namespace {

void check(const BlockScaledGemmArgs& g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) throw_error("block_scaled_gemm: m = {}, n = {}, k = {} must be >= 1", g.m, g.n, g.k);
  // Past 128 products the block sum may need more than double's 53 bits, and the "exact block sums" claim fails.
  if (g.block_k <= 0 || g.block_k > kGemmScaleBlock)
    throw_error("block_scaled_gemm: block_k = {} must be in [1, {}]", g.block_k, kGemmScaleBlock);
  if (g.block_n <= 0) throw_error("block_scaled_gemm: block_n = {} must be >= 1", g.block_n);
  if (!g.a || !g.sfa || !g.b || !g.sfb)
    throw_error("block_scaled_gemm: {} is null", !g.a ? "a" : !g.sfa ? "sfa" : !g.b ? "b" : "sfb");
}

}  // namespace

std::vector<double> block_scaled_gemm_f64(const BlockScaledGemmArgs& g) {
  check(g);
  const int64_t kb_count = (g.k + g.block_k - 1) / g.block_k;
  // Decode each operand once: 256 codes, exact in fp32 and so in double.
  auto decode = [](const num::Fp8Bits* p, int64_t count) {
    std::vector<double> v(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = num::fp8_e4m3_to_float(p[i]);
    return v;
  };
  const std::vector<double> a = decode(g.a, g.m * g.k), b = decode(g.b, g.n * g.k);
  std::vector<double> d(static_cast<size_t>(g.m * g.n), 0.0);
  for (int64_t i = 0; i < g.m; ++i) {
    const double* ar = a.data() + i * g.k;
    for (int64_t j = 0; j < g.n; ++j) {
      const double* br = b.data() + j * g.k;
      const float* sb = g.sfb + (j / g.block_n) * kb_count;
      double acc = 0.0;
      for (int64_t kb = 0; kb < kb_count; ++kb) {
        const int64_t k0 = kb * g.block_k, k1 = k0 + g.block_k < g.k ? k0 + g.block_k : g.k;
        double block = 0.0;
        for (int64_t kk = k0; kk < k1; ++kk) block += ar[kk] * br[kk];
        const double scale = static_cast<double>(g.sfa[i * kb_count + kb]) * static_cast<double>(sb[kb]);
        acc += scale * block;
      }
      d[static_cast<size_t>(i * g.n + j)] = acc;
    }
  }
  return d;
}

}  // namespace hisparse::cpu_ref
