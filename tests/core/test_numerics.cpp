// @brief Shared numerics: bf16 rounding, our exp2/log2 against libm in float64, the top-k key order.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "core/numerics/numerics.h"

using namespace hisparse;
using namespace hisparse::num;

TEST_CASE("numerics: bf16 rounds to nearest even and canonicalises NaN") {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  CHECK(float_to_bf16(1.00390625f) == 0x3f80);
  // 1.0078125 + 2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
  CHECK(float_to_bf16(1.01171875f) == 0x3f82);
  CHECK(float_to_bf16(1.0f + 1.0f / 128.0f + 1.0f / 65536.0f) == 0x3f81);
  CHECK(float_to_bf16(hs_inf()) == 0x7f80);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(float_to_bf16(bits_float(0xffc12345u)) == 0x7fc0);
  CHECK(float_to_bf16(bits_float(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds up to inf, as RNE says
  for (uint32_t b = 0; b < 0x10000u; b += 7)
    if (!std::isnan(bf16_to_float(uint16_t(b)))) CHECK(float_to_bf16(bf16_to_float(uint16_t(b))) == b);
}

TEST_CASE("numerics: hs_exp2 within 2 ulp of 2^x, exact at integers, defined edges") {
  std::mt19937_64 g(11);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f * 126.0f;
    const double ref = std::exp2(double(x));
    const double got = hs_exp2(x);
    const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
    worst = std::max(worst, std::fabs(got - ref) / ulp);
  }
  MESSAGE("hs_exp2 worst error: " << worst << " ulp");
  CHECK(worst <= 2.0);
  for (int e = -126; e <= 127; ++e) CHECK(hs_exp2(float(e)) == std::ldexp(1.0f, e));
  CHECK(hs_exp2(-hs_inf()) == 0.0f);
  CHECK(hs_exp2(-126.5f) == 0.0f);
  CHECK(hs_exp2(128.0f) == hs_inf());
  CHECK(std::isnan(hs_exp2(canonical_nan_f32())));
}

TEST_CASE("numerics: hs_log2 within 2 ulp (absolute at 1) and defined edges") {
  std::mt19937_64 g(12);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = bits_float(uint32_t(0x00800000u + g() % (0x7f000000u)));
    const double ref = std::log2(double(x));
    const double got = hs_log2(x);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(std::fabs(ref)), 0) - 23);
    worst = std::max(worst, std::fabs(got - ref) / ulp);
  }
  MESSAGE("hs_log2 worst error: " << worst << " ulp");
  CHECK(worst <= 2.0);
  CHECK(hs_log2(1.0f) == 0.0f);
  CHECK(hs_log2(1024.0f) == 10.0f);
  CHECK(hs_log2(0.0f) == -hs_inf());
  CHECK(std::isnan(hs_log2(-1.0f)));
  CHECK(std::fabs(hs_log2(1e-40f) - std::log2(double(1e-40f))) < 1e-5);
}

TEST_CASE("numerics: top-k key is monotone, -0 == +0, NaN lowest") {
  const float v[] = {-hs_inf(), -1e30f, -1.0f, -1e-40f, 0.0f, 1e-40f, 1.0f, 1e30f, hs_inf()};
  for (size_t i = 0; i + 1 < sizeof v / sizeof v[0]; ++i) CHECK(topk_key(v[i]) < topk_key(v[i + 1]));
  CHECK(topk_key(-0.0f) == topk_key(0.0f));
  CHECK(topk_key(canonical_nan_f32()) == 0u);
  CHECK(topk_key(-hs_inf()) > 0u);
}
