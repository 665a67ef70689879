// @brief The fp8 lightning indexer on the CPU: E4M3 decode of all 256 codes against the format's definition, the
// scores (through CpuBackend) against an independent float64 computation within a bound derived from the fma
// chains, the defined edges (key scale after the ReLU, NaN codes, zero scales, checks), and the bf16 path
// unchanged (the documented chain bit for bit, and the very bits the code gave before the fp8 path existed).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "cpu_ref/backend_cpu.h"
#include "cpu_ref/indexer.h"

using namespace hisparse;

namespace {

/// E4M3FN by its definition (OCP 8-bit floating point, E4M3 with bias 7, no infinities, S.1111.111 = NaN),
/// evaluated in double with ldexp: no bit manipulation shared with core/numerics/fp8.h.
double e4m3_by_definition(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::nan("");
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

float u_pm1(std::mt19937_64& g) { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; }

/// Any non-NaN code, subnormals and ±448 included.
num::Fp8Bits any_finite_fp8(std::mt19937_64& g) {
  const auto c = num::Fp8Bits(g() % 254);
  return c >= 0x7f ? num::Fp8Bits(c + 1) : c;
}

/// A filled fp8 case: T tokens, each scoring `n` key rows from row 3·t, a row stride of n + 5.
struct Fp8Case {
  std::vector<num::Fp8Bits> q, keys;
  std::vector<float> w, scale, scores;
  std::vector<int64_t> start;
  std::vector<int32_t> len;
  IndexerArgs args(int32_t tokens, int32_t n) {
    IndexerArgs a;
    a.dtype = IndexerDtype::kFp8E4m3;
    a.tokens = tokens;
    a.max_len = n + 5;
    a.q_fp8 = q.data();
    a.weights = w.data();
    a.keys_fp8 = keys.data();
    a.key_scale = scale.data();
    a.key_rows = int64_t(scale.size());
    start.resize(size_t(tokens));
    len.assign(size_t(tokens), n);
    for (int32_t t = 0; t < tokens; ++t) start[size_t(t)] = 3 * t;
    a.key_start = start.data();
    a.seq_len = len.data();
    scores.assign(size_t(tokens) * size_t(a.max_len), 123.0f);
    a.scores = scores.data();
    return a;
  }
};

Fp8Case random_fp8_case(std::mt19937_64& g, int32_t tokens, int32_t n) {
  Fp8Case c;
  c.q.resize(size_t(tokens) * kIndexerHeads * kIndexerDim);
  for (auto& v : c.q) v = any_finite_fp8(g);
  const size_t rows = size_t(3 * (tokens - 1) + n);
  c.keys.resize(rows * kIndexerDim);
  for (auto& v : c.keys) v = any_finite_fp8(g);
  c.w.resize(size_t(tokens) * kIndexerHeads);
  for (auto& v : c.w) v = u_pm1(g) * 0.125f;
  c.scale.resize(rows);
  for (auto& v : c.scale) {
    const int e = int(g() % 20);
    v = e % 7 == 6 ? 0.0f : std::ldexp(1.0f + std::fabs(u_pm1(g)), -e);  // one in seven or so exactly zero
  }
  return c;
}

uint64_t fnv1a_bits(const std::vector<float>& v) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (float f : v) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int b = 0; b < 4; ++b) h = (h ^ ((u >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
  }
  return h;
}

}  // namespace

TEST_CASE("fp8 e4m3: all 256 codes decode exactly to the format's values; the two NaN codes to 0x7fc00000") {
  int nan_codes = 0;
  for (int c = 0; c < 256; ++c) {
    const float got = num::fp8_e4m3_to_float(num::Fp8Bits(c));
    const double want = e4m3_by_definition(c);
    CHECK(num::fp8_e4m3_is_nan(num::Fp8Bits(c)) == std::isnan(want));
    if (std::isnan(want)) {
      ++nan_codes;
      CHECK(num::float_bits(got) == 0x7fc00000u);
      continue;
    }
    CHECK_MESSAGE(double(got) == want, "code 0x" << std::hex << c << ": " << got << " vs " << want);
    CHECK_MESSAGE(std::signbit(got) == bool(c & 0x80), "code 0x" << std::hex << c);  // -0 for 0x80
  }
  CHECK(nan_codes == 2);
  CHECK(num::fp8_e4m3_to_float(0x7e) == num::kFp8E4m3Max);
  CHECK(num::fp8_e4m3_to_float(0xfe) == -448.0f);
  CHECK(num::fp8_e4m3_to_float(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(num::fp8_e4m3_to_float(0x07) == std::ldexp(7.0f, -9));  // largest subnormal
  CHECK(num::fp8_e4m3_to_float(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(num::fp8_e4m3_to_float(0x38) == 1.0f);
  CHECK(num::float_bits(num::fp8_e4m3_to_float(0x80)) == 0x80000000u);
}

// The bound. u = 2^-24, γ_n = n·u / (1 − n·u). Each product of two decoded codes is exact in fp32, so a head's fma
// chain of 128 terms errs by at most γ_127·S_h (S_h = Σ_d |q_d·k_d|); ReLU is 1-Lipschitz; the 64-step head chain
// errs by at most γ_64·Σ_h |w_h|·r_h with r_h ≤ (1 + γ_127)·S_h; the final product by the scale rounds once. So
//   |score − exact| ≤ |scale|·(γ_127 + γ_64·(1 + γ_127))·W·(1 + u) + u·|exact| + 130·2^-149,   W = Σ_h |w_h|·S_h,
// the last term for the underflow of a tiny product. The float64 dot products are exact (each product is a multiple
// of 2^-18 below 2^18, so every partial sum fits 53 bits); only the double head sum rounds, far below the bound.
TEST_CASE("indexer fp8 (CpuBackend): within the derived bound of an exact float64 score, -inf past seq_len") {
  std::mt19937_64 g(31);
  const int32_t T = 2, n = 60;
  Fp8Case c = random_fp8_case(g, T, n);
  IndexerArgs a = c.args(T, n);
  cpu_ref::CpuBackend be;
  be.indexer_scores(a);
  const double u = std::ldexp(1.0, -24);
  auto gamma = [&](int k) { return k * u / (1 - k * u); };
  const double cfac = gamma(127) + gamma(64) * (1 + gamma(127));
  double worst = 0;
  for (int32_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < a.max_len; ++s) {
      const float got = c.scores[size_t(t * a.max_len + s)];
      if (s >= n) {
        CHECK(got == -INFINITY);
        continue;
      }
      const int64_t r = c.start[size_t(t)] + s;
      double sum = 0, W = 0;
      for (int h = 0; h < kIndexerHeads; ++h) {
        double dot = 0, S = 0;
        for (int d = 0; d < kIndexerDim; ++d) {
          const double p = e4m3_by_definition(c.q[(size_t(t) * kIndexerHeads + h) * kIndexerDim + d]) *
                           e4m3_by_definition(c.keys[size_t(r) * kIndexerDim + d]);
          dot += p;
          S += std::fabs(p);
        }
        const double wh = c.w[size_t(t) * kIndexerHeads + h];
        sum += wh * std::max(dot, 0.0);
        W += std::fabs(wh) * S;
      }
      const double sc = c.scale[size_t(r)], exact = sc * sum;
      const double bound = std::fabs(sc) * cfac * W * (1 + u) + u * std::fabs(exact) + 130 * std::ldexp(1.0, -149);
      const double err = std::fabs(double(got) - exact);
      CHECK_MESSAGE(err <= bound, "token " << t << " pos " << s << ": " << got << " vs " << exact);
      if (bound > 0) worst = std::max(worst, err / bound);
    }
  MESSAGE("fp8 indexer: worst error / derived bound = " << worst);
}

TEST_CASE("indexer fp8: the key scale multiplies after the ReLU and the head sum; NaN codes; zero scales; checks") {
  std::mt19937_64 g(32);
  const int32_t n = 40;
  Fp8Case c = random_fp8_case(g, 1, n);
  for (auto& s : c.scale) s = 0.75f;
  IndexerArgs a = c.args(1, n);
  cpu_ref::indexer_scores(a);
  const std::vector<float> base = c.scores;
  // A negative scale negates the score exactly: the scale is outside the ReLU (relu(−0.75·dot) would not be).
  for (auto& s : c.scale) s = -0.75f;
  a = c.args(1, n);
  cpu_ref::indexer_scores(a);
  for (int32_t s = 0; s < n; ++s) CHECK(c.scores[size_t(s)] == -base[size_t(s)]);
  // A zero scale gives zero.
  for (auto& s : c.scale) s = 0.0f;
  a = c.args(1, n);
  cpu_ref::indexer_scores(a);
  for (int32_t s = 0; s < n; ++s) CHECK(c.scores[size_t(s)] == 0.0f);
  for (auto& s : c.scale) s = 0.75f;
  // A NaN code in head 5 of q silences that head: the same bits as a zero weight for it.
  Fp8Case nan_q = c, zero_w = c;
  nan_q.q[5 * kIndexerDim + 17] = 0xff;
  zero_w.w[5] = 0.0f;
  a = nan_q.args(1, n);
  cpu_ref::indexer_scores(a);
  a = zero_w.args(1, n);
  cpu_ref::indexer_scores(a);
  CHECK(std::memcmp(nan_q.scores.data(), zero_w.scores.data(), nan_q.scores.size() * 4) == 0);
  // A NaN code in a key row silences every head: +0 · scale = +0.
  Fp8Case nan_k = c;
  nan_k.keys[size_t(7) * kIndexerDim + 100] = 0x7f;
  a = nan_k.args(1, n);
  cpu_ref::indexer_scores(a);
  CHECK(num::float_bits(nan_k.scores[7]) == 0u);
  // A NaN weight (or scale) gives the canonical NaN, the same bits on every backend.
  Fp8Case nan_w = c;
  nan_w.w[3] = std::nanf("");
  a = nan_w.args(1, n);
  cpu_ref::indexer_scores(a);
  for (int32_t s = 0; s < n; ++s) CHECK(num::float_bits(nan_w.scores[size_t(s)]) == 0x7fc00000u);
  // Checks: the fp8 inputs are required; an unknown dtype is refused.
  a = c.args(1, n);
  a.key_scale = nullptr;
  CHECK_THROWS_WITH_AS(cpu_ref::indexer_scores(a), doctest::Contains("key_scale"), Error);
  a = c.args(1, n);
  a.dtype = static_cast<IndexerDtype>(7);
  CHECK_THROWS_WITH_AS(cpu_ref::indexer_scores(a), doctest::Contains("dtype = 7"), Error);
}

// The bf16 path is untouched by the fp8 one: it is the documented chain (written out here with std::fma), fp8
// pointers in the view change nothing, and its bits are those the code gave before the fp8 path existed (the hash
// below was produced by the bf16-only implementation of commit efab05b on these inputs).
TEST_CASE("indexer bf16: the documented chain bit for bit, unchanged by the fp8 path") {
  std::mt19937_64 g(33);
  const int32_t T = 2, n = 50;
  std::vector<num::Bf16Bits> q(size_t(T) * kIndexerHeads * kIndexerDim), keys(size_t(n + 3) * kIndexerDim);
  // Mixed magnitudes, subnormals included.
  for (auto& v : q) {
    const int e = int(g() % 140);
    v = num::float_to_bf16(std::ldexp(u_pm1(g), -e));
  }
  for (auto& v : keys) {
    const int e = int(g() % 20);
    v = num::float_to_bf16(std::ldexp(u_pm1(g), -e));
  }
  std::vector<float> w(size_t(T) * kIndexerHeads), scores(size_t(T) * (n + 5), 123.0f);
  for (auto& v : w) v = u_pm1(g);
  std::vector<int64_t> start{0, 3};
  std::vector<int32_t> len{n, n - 7};
  IndexerArgs a;
  a.tokens = T;
  a.max_len = n + 5;
  a.q = q.data();
  a.weights = w.data();
  a.keys = keys.data();
  a.key_rows = n + 3;
  a.key_start = start.data();
  a.seq_len = len.data();
  a.scores = scores.data();
  std::vector<num::Fp8Bits> junk(size_t(T) * kIndexerHeads * kIndexerDim, 0x7f);
  std::vector<float> junk_scale(size_t(n + 3), std::nanf(""));
  a.q_fp8 = junk.data();  // ignored: dtype is bf16 (the default)
  a.keys_fp8 = junk.data();
  a.key_scale = junk_scale.data();
  cpu_ref::indexer_scores(a);
  for (int32_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < a.max_len; ++s) {
      float want = -INFINITY;
      if (s < len[size_t(t)]) {
        want = 0.0f;
        for (int h = 0; h < kIndexerHeads; ++h) {
          float dot = 0.0f;
          for (int d = 0; d < kIndexerDim; ++d)
            dot = std::fma(num::bf16_to_float(q[(size_t(t) * kIndexerHeads + h) * kIndexerDim + d]),
                           num::bf16_to_float(keys[size_t(start[size_t(t)] + s) * kIndexerDim + d]), dot);
          want = std::fma(w[size_t(t) * kIndexerHeads + h], dot > 0.0f ? dot : 0.0f, want);
        }
      }
      const float got = scores[size_t(t * a.max_len + s)];
      CHECK_MESSAGE(std::memcmp(&got, &want, 4) == 0, "token " << t << " pos " << s);
    }
  CHECK(fnv1a_bits(scores) == 0xb7368be2932756aaull);
}
