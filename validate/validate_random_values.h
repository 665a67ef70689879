// @brief Random value generators of the numeric `hisparse validate` operations (attention, indexer, top-k):
// our own mappings from the seeded 64-bit stream, so cases are the same on every platform.
#pragma once

#include <cstdint>

#include "validate/validate.h"
#include "core/numerics/bf16.h"

namespace hisparse::validation {

/// Uniform in [-1, 1) with 24 random bits.
inline float uniform_pm1(Rng& rng) { return float(int64_t(rng.next() >> 40) - (int64_t(1) << 23)) / 8388608.0f; }

/// 2^e exactly, for |e| <= 126.
inline float pow2f(int e) { return num::bits_float(uint32_t(e + 127) << 23); }

/// A value of a "magnitude profile": base scale 2^scale_exp; with `spread` > 0 each value also gets its own
/// 2^(-spread..spread) factor (mixed magnitudes in one vector).
inline float random_value(Rng& rng, int scale_exp, int spread) {
  float v = uniform_pm1(rng) * pow2f(scale_exp);
  if (spread > 0) v = v * pow2f(int(rng.range(-spread, spread)));
  return v;
}

inline num::Bf16Bits random_bf16(Rng& rng, int scale_exp, int spread) {
  return num::float_to_bf16(random_value(rng, scale_exp, spread));
}

}  // namespace hisparse::validation
