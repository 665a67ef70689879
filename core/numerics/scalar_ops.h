// @brief The scalar operations both backends use: explicit fma, max, rint, and our own exp2/log2.
//
// Floating-point policy (docs/numerics.md):
// - Flush-to-zero is OFF on both sides (host: no -ffast-math; device: -ftz=false). hs_exp2 never produces a
//   subnormal (results below 2^-126 are defined to be +0), so the policy matters only for the dot products,
//   which are IEEE fma chains on both sides and handle subnormals identically.
// - Every fused multiply-add is written as hs_fma; a plain a*b+c never appears in shared arithmetic (the host is
//   compiled with -ffp-contract=off, the device with -fmad=false, so the compiler fuses nothing by itself).
// - Only correctly rounded IEEE operations are used (+, -, *, /, fma, rint, comparisons, bit manipulation), which
//   give identical bits on x86-64 and sm_90; transcendental functions are evaluated by our own polynomials.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"

namespace hisparse::num {

constexpr float kLog2e = 1.44269504088896340736f;  // log2(e)
constexpr float kLn2 = 0.69314718055994530942f;    // ln(2)

HS_HOST_DEVICE float hs_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// a > b ? a : b. Written out (not fmaxf) so that the NaN behaviour is the same everywhere: a NaN in `b` is
/// returned only when a is not greater, a NaN in `a` loses. The shared code never feeds it NaN in practice.
HS_HOST_DEVICE float hs_max(float a, float b) { return a > b ? a : b; }

/// Round to the nearest integer, ties to even (exact on both sides).
HS_HOST_DEVICE float hs_rint(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  return std::nearbyint(x);  // default rounding mode is round-to-nearest-even; never changed in this project
#endif
}

HS_HOST_DEVICE float hs_inf() { return bits_float(0x7f800000u); }

/// 2^x. Range reduction x = n + f with n = rint(x), |f| <= 1/2 (exact), then 2^f by the degree-7 Taylor polynomial
/// of e^(f ln 2) evaluated by Horner with fma (truncation error < 6e-9 relative), then scaled by 2^n through the
/// exponent bits (exact). Defined results: x < -126 → +0 (no subnormals), x >= 128 → +inf (overflow), NaN → NaN.
/// Max error ~2 ulp against the true 2^x (tests/core/test_numerics.cpp measures it).
HS_HOST_DEVICE float hs_exp2(float x) {
  if (x != x) return x;
  if (x < -126.0f) return 0.0f;
  if (x >= 128.0f) return hs_inf();
  const float n = hs_rint(x);
  const float f = x - n;
  float p = 1.5252733804059841e-05f;  // ln2^7 / 7!
  p = hs_fma(p, f, 1.5403530393381609e-04f);
  p = hs_fma(p, f, 1.3333558146428443e-03f);
  p = hs_fma(p, f, 9.6181291076284772e-03f);
  p = hs_fma(p, f, 5.5504108664821580e-02f);
  p = hs_fma(p, f, 2.4022650695910071e-01f);
  p = hs_fma(p, f, 6.9314718055994531e-01f);
  p = hs_fma(p, f, 1.0f);
  const int e = int(n);  // -126 .. 128
  if (e > 127) return (p * bits_float(uint32_t(127 + 127) << 23)) * 2.0f;
  // x >= -126 means f >= 0 when n == -126, so the product stays normal.
  return p * bits_float(uint32_t(e + 127) << 23);
}

/// log2(x). x = 2^e * m with m in [sqrt(1/2), sqrt(2)); log2(m) = (2/ln2) * atanh(z), z = (m-1)/(m+1), by the odd
/// series through z^13 (|z| < 0.172, truncation < 1e-11). Defined: x == 0 → -inf, x < 0 or NaN → NaN, +inf → +inf;
/// subnormal x is scaled up first.
HS_HOST_DEVICE float hs_log2(float x) {
  if (x != x || x < 0.0f) return canonical_nan_f32();
  if (x == 0.0f) return -hs_inf();
  if (x == hs_inf()) return x;
  int e_adj = 0;
  if (x < 1.17549435e-38f) {
    x = x * 8388608.0f;  // 2^23, exact
    e_adj = -23;
  }
  const uint32_t u = float_bits(x);
  int e = int((u >> 23) & 0xffu) - 127 + e_adj;
  float m = bits_float((u & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356f) {
    m = m * 0.5f;  // exact
    e += 1;
  }
  const float z = (m - 1.0f) / (m + 1.0f);  // m - 1 is exact (Sterbenz)
  const float z2 = z * z;
  float s = 1.0f / 13.0f;
  s = hs_fma(s, z2, 1.0f / 11.0f);
  s = hs_fma(s, z2, 1.0f / 9.0f);
  s = hs_fma(s, z2, 1.0f / 7.0f);
  s = hs_fma(s, z2, 1.0f / 5.0f);
  s = hs_fma(s, z2, 1.0f / 3.0f);
  s = hs_fma(s, z2, 1.0f);
  const float log2_m = (z * s) * (2.0f * kLog2e);
  return float(e) + log2_m;
}

}  // namespace hisparse::num
