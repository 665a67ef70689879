// @brief bf16 <-> fp32 conversion (round to nearest even) and float bit casts, shared by cpu_ref/ and cuda/.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/hs_host_device.h"

namespace hisparse::num {

/// A bf16 value is carried as its 16 raw bits everywhere (host and device), so no library type decides rounding.
using Bf16Bits = uint16_t;

HS_HOST_DEVICE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

HS_HOST_DEVICE float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// Exact: a bf16 is the top half of an fp32.
HS_HOST_DEVICE float bf16_to_float(Bf16Bits b) { return bits_float(uint32_t(b) << 16); }

/// Round to nearest, ties to even. Every NaN becomes the one quiet NaN 0x7FC0 so that both backends write the
/// same bits (x86 and CUDA produce different NaN payloads); infinities and signed zeros are kept. Subnormal fp32
/// inputs round like any other value (no flush to zero).
HS_HOST_DEVICE Bf16Bits float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return Bf16Bits(0x7fc0);
  const uint32_t lsb = (u >> 16) & 1u;
  return Bf16Bits((u + 0x7fffu + lsb) >> 16);
}

/// The fp32 output convention for NaN, for the same reason as above.
HS_HOST_DEVICE float canonical_nan_f32() { return bits_float(0x7fc00000u); }
HS_HOST_DEVICE float canonicalize_f32(float f) { return f != f ? canonical_nan_f32() : f; }

}  // namespace hisparse::num
