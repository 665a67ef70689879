// @brief FP8 E4M3FN (the OCP 8-bit format `torch.float8_e4m3fn`, `__nv_fp8_e4m3`) → fp32, exact, for every code.
//
// Layout s.eeee.mmm, exponent bias 7, no infinities:
//   e = 1..15 (except s.1111.111): (-1)^s · (1 + m/8) · 2^(e-7)      normal, largest 0x7e = 1.75 · 2^8 = 448
//   e = 0                        : (-1)^s · (m/8) · 2^-6 = m · 2^-9  subnormal (0x00 = +0, 0x80 = -0)
//   s.1111.111 (0x7f, 0xff)      : NaN, decoded to the canonical fp32 NaN 0x7fc00000 (sign and payload dropped,
//                                  as bf16.h does), so both backends hold the same bits
// Every finite E4M3 value is an fp32 value (3 significand bits, exponents -9 .. 8), so the decode is exact, and
// the product of two decoded values is exact in fp32 too (at most 8 significand bits, magnitude 2^-18 .. 448²).
#pragma once

#include <cstdint>

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"

namespace hisparse::num {

/// An FP8 E4M3FN value carried as its raw byte (host and device alike, like Bf16Bits).
using Fp8Bits = uint8_t;

constexpr float kFp8E4m3Max = 448.0f;  // largest finite magnitude (codes 0x7e, 0xfe)

/// True for the two NaN codes 0x7f and 0xff.
HS_HOST_DEVICE bool fp8_e4m3_is_nan(Fp8Bits b) { return (b & 0x7fu) == 0x7fu; }

/// Exact decode by bit manipulation: a normal code moves its exponent and mantissa into fp32's fields
/// (rebias 7 → 127); a subnormal code is m · 2^-9 (an exact int → float conversion and a power-of-two product);
/// the sign is OR-ed in last, so 0x80 gives -0.
HS_HOST_DEVICE float fp8_e4m3_to_float(Fp8Bits b) {
  if (fp8_e4m3_is_nan(b)) return canonical_nan_f32();
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint32_t e = (b >> 3) & 0xfu;
  const uint32_t m = b & 0x7u;
  if (e == 0) {
    const float mag = float(int(m)) * bits_float(uint32_t(127 - 9) << 23);  // m · 2^-9, exact
    return bits_float(float_bits(mag) | sign);
  }
  return bits_float(sign | ((e - 7u + 127u) << 23) | (m << 20));
}

}  // namespace hisparse::num
