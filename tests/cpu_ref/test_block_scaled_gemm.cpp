// @brief The float64 block-scaled fp8 GEMM (cpu_ref/block_scaled_gemm.h) on hand-worked cases: two scaled k blocks, a
// partial k block and a second n block of B's scales, a block sum that fp32 would lose and double keeps exactly, NaN,
// and the argument checks; FlashMLA's fp8 KV row (cpu_ref/mla_fp8_cache.h) dequantized by hand; the float64 attention
// over double rows equal to the bf16 one on the same values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/error_of.h"
#include "cpu_ref/block_scaled_gemm.h"
#include "cpu_ref/mla_fp8_cache.h"
#include "cpu_ref/sparse_attention.h"

using namespace hisparse;

namespace {

// E4M3 codes of the values the cases use: s.eeee.mmm, bias 7.
constexpr num::Fp8Bits kOne = 0x38, kTwo = 0x40, kHalf = 0x30, kOneHalf = 0x3c, kMinusOne = 0xb8, kMinusTwo = 0xc0;
constexpr num::Fp8Bits k448 = 0x7e, kMinus448 = 0xfe, kTiny = 0x01 /* 2^-9 */, kNan = 0x7f;

std::string error_of(const cpu_ref::BlockScaledGemmArgs& g) {
  return test::error_of([&] { cpu_ref::block_scaled_gemm_f64(g); });
}

}  // namespace

TEST_CASE("two k blocks: each block sum is scaled by its own sfa x sfb") {
  // a = 1 x 128 then 2 x 128, b = 0.5 everywhere, sfa = [2, 0.25], sfb = [[1, 4]]:
  // block 0: 128 * 0.5 = 64, x 2 * 1 = 128; block 1: 128 * 1 = 128, x 0.25 * 4 = 128; D = 256.
  std::vector<num::Fp8Bits> a(256, kOne), b(256, kHalf);
  for (int k = 128; k < 256; ++k) a[k] = kTwo;
  const std::vector<float> sfa{2.0f, 0.25f}, sfb{1.0f, 4.0f};
  cpu_ref::BlockScaledGemmArgs g;
  g.m = 1, g.n = 1, g.k = 256, g.a = a.data(), g.sfa = sfa.data(), g.b = b.data(), g.sfb = sfb.data();
  const std::vector<double> d = cpu_ref::block_scaled_gemm_f64(g);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == 256.0);
}

TEST_CASE("a partial last k block and B's second n block take their own scales") {
  // m 2, n 130, k 130: k blocks [0, 128) and [128, 130), n blocks [0, 128) and [128, 130).
  // a row 0 = 1, row 1 = -1; b = 1.5 everywhere: block sums 128 * 1.5 = 192 and 2 * 1.5 = 3 (negated for row 1).
  // sfa = [[1, 2], [0.5, 0.5]], sfb = [[1, 1], [4, 0.25]]:
  //   D[0][0]   = 1 * 1 * 192 + 2 * 1 * 3           = 198
  //   D[0][129] = 1 * 4 * 192 + 2 * 0.25 * 3        = 769.5
  //   D[1][0]   = -(0.5 * 1 * 192 + 0.5 * 1 * 3)    = -97.5
  //   D[1][129] = -(0.5 * 4 * 192 + 0.5 * 0.25 * 3) = -384.375
  const int64_t m = 2, n = 130, k = 130;
  std::vector<num::Fp8Bits> a(m * k, kOne), b(n * k, kOneHalf);
  for (int64_t i = k; i < 2 * k; ++i) a[i] = kMinusOne;
  const std::vector<float> sfa{1.0f, 2.0f, 0.5f, 0.5f}, sfb{1.0f, 1.0f, 4.0f, 0.25f};
  cpu_ref::BlockScaledGemmArgs g;
  g.m = m, g.n = n, g.k = k, g.a = a.data(), g.sfa = sfa.data(), g.b = b.data(), g.sfb = sfb.data();
  const std::vector<double> d = cpu_ref::block_scaled_gemm_f64(g);
  REQUIRE(d.size() == size_t(m * n));
  CHECK(d[0] == 198.0);
  CHECK(d[127] == 198.0);  // the last column of n block 0
  CHECK(d[128] == 769.5);  // the first of n block 1
  CHECK(d[129] == 769.5);
  CHECK(d[n] == -97.5);
  CHECK(d[n + 129] == -384.375);
}

TEST_CASE("a block sum is exact: 448^2 + 2^-18 - 448^2 gives 2^-18, which an fp32 chain would lose") {
  // In fp32, 200704 + 2^-18 rounds back to 200704 (24 bits cannot span 2^17 .. 2^-18), so the chain would give 0.
  const std::vector<num::Fp8Bits> a{k448, kTiny, kMinus448}, b{k448, kTiny, k448};
  const std::vector<float> sfa{1.0f}, sfb{1.0f};
  cpu_ref::BlockScaledGemmArgs g;
  g.m = 1, g.n = 1, g.k = 3, g.a = a.data(), g.sfa = sfa.data(), g.b = b.data(), g.sfb = sfb.data();
  CHECK(cpu_ref::block_scaled_gemm_f64(g)[0] == std::ldexp(1.0, -18));
  CHECK(float(200704.0f + std::ldexp(1.0f, -18)) - 200704.0f == 0.0f);
}

TEST_CASE("a NaN code gives NaN; bad arguments are refused naming the field") {
  const std::vector<num::Fp8Bits> a{kNan, kOne}, b{kOne, kOne};
  const std::vector<float> sfa{1.0f}, sfb{1.0f};
  cpu_ref::BlockScaledGemmArgs g;
  g.m = 1, g.n = 1, g.k = 2, g.a = a.data(), g.sfa = sfa.data(), g.b = b.data(), g.sfb = sfb.data();
  CHECK(std::isnan(cpu_ref::block_scaled_gemm_f64(g)[0]));

  cpu_ref::BlockScaledGemmArgs bad = g;
  bad.block_k = 256;  // past 128 products the block sum may round: the exactness claim needs block_k <= 128
  CHECK(error_of(bad).find("block_k = 256") != std::string::npos);
  bad = g;
  bad.sfb = nullptr;
  CHECK(error_of(bad).find("sfb is null") != std::string::npos);
  bad = g;
  bad.m = 0;
  CHECK(error_of(bad).find("m = 0") != std::string::npos);
}

TEST_CASE("FlashMLA's V32 fp8 row: code x its tile's scale, rope dims as bf16") {
  // Row bytes: [0, 512) codes, [512, 528) four fp32 scales, [528, 656) 64 bf16 rope values.
  std::vector<uint8_t> row(cpu_ref::kMlaFp8RowBytes, 0);
  row[0] = kOne;         // tile 0, scale 0.375 -> 0.375
  row[200] = kMinusTwo;  // tile 1, scale 3 -> -6
  const float scales[4] = {0.375f, 3.0f, 1.0f, 1.0f};
  std::memcpy(row.data() + cpu_ref::kMlaFp8ScaleOffset, scales, sizeof scales);
  const uint16_t rope0 = 0x3fc0;  // bf16 1.5
  std::memcpy(row.data() + cpu_ref::kMlaFp8RopeOffset, &rope0, 2);
  const std::vector<double> v = cpu_ref::dequantize_mla_fp8_rows(row.data(), int64_t(row.size()));
  REQUIRE(v.size() == 576);
  CHECK(v[0] == 0.375);
  CHECK(v[200] == -6.0);
  CHECK(v[1] == 0.0);
  CHECK(v[512] == 1.5);
  CHECK(test::error_of([&] { cpu_ref::dequantize_mla_fp8_rows(row.data(), 655); }).find("655 bytes") != std::string::npos);
}

TEST_CASE("the float64 attention over double rows equals the bf16 one on the same values") {
  const int32_t heads = 64, top_k = 3, slots = 4;
  std::vector<num::Bf16Bits> q(size_t(heads) * kMlaQkDim), kv(size_t(slots) * kMlaQkDim);
  for (size_t i = 0; i < q.size(); ++i) q[i] = num::float_to_bf16(float(int(i % 13) - 6) / 8.0f);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = num::float_to_bf16(float(int(i % 7) - 3) / 4.0f);
  std::vector<double> kv64(kv.size());
  for (size_t i = 0; i < kv.size(); ++i) kv64[i] = num::bf16_to_float(kv[i]);
  const std::vector<int32_t> idx{2, -1, 0};
  std::vector<num::Bf16Bits> out(size_t(heads) * kMlaVDim);
  std::vector<float> lse(heads);
  SparseAttentionArgs args;
  args.tokens = 1, args.heads = heads, args.top_k = top_k, args.slots = slots, args.sm_scale = 0.125f;
  args.q = q.data(), args.kv = kv.data(), args.indices = idx.data(), args.out = out.data(), args.lse = lse.data();
  std::vector<double> o1, l1, o2, l2;
  cpu_ref::sparse_attention_f64(args, o1, l1);
  args.kv = nullptr;  // not read by the double-row form
  cpu_ref::sparse_attention_f64(args, kv64, o2, l2);
  CHECK(o1 == o2);
  CHECK(l1 == l2);
}
