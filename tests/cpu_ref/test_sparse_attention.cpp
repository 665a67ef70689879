// @brief cpu_ref sparse attention: float64 agreement, the all -1 convention, -1 padding, argument checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/numerics/scalar_ops.h"
#include "cpu_ref/sparse_attention.h"
#include "cpu_ref/sparse_attention_compare.h"

using namespace hisparse;

namespace {
struct Inputs {
  std::vector<num::Bf16Bits> q, kv, out;
  std::vector<int32_t> idx;
  std::vector<float> lse;
  SparseAttentionArgs a;
};

Inputs make(uint64_t seed, int tokens, int heads, int k, int slots) {
  std::mt19937_64 g(seed);
  auto u = [&] { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; };
  Inputs in;
  in.q.resize(size_t(tokens) * heads * kMlaQkDim);
  for (auto& v : in.q) v = num::float_to_bf16(u());
  in.kv.resize(size_t(slots) * kMlaQkDim);
  for (auto& v : in.kv) v = num::float_to_bf16(u());
  in.idx.resize(size_t(tokens) * k);
  for (auto& v : in.idx) v = int32_t(g() % uint64_t(slots));
  in.out.assign(size_t(tokens) * heads * kMlaVDim, 0xffff);
  in.lse.assign(size_t(tokens) * heads, num::canonical_nan_f32());
  in.a.tokens = tokens;
  in.a.heads = heads;
  in.a.top_k = k;
  in.a.slots = slots;
  in.a.sm_scale = 1.0f / 24.0f;
  return in;
}
void bind(Inputs& in) {
  in.a.q = in.q.data();
  in.a.kv = in.kv.data();
  in.a.indices = in.idx.data();
  in.a.out = in.out.data();
  in.a.lse = in.lse.data();
}
}  // namespace

TEST_CASE("attention cpu_ref: within FlashMLA's tolerance of float64 on random inputs (odd K, tile edges)") {
  for (int k : {1, 3, 63, 64, 65, 129}) {
    Inputs in = make(100 + k, 2, 64, k, 300);
    bind(in);
    cpu_ref::sparse_attention(in.a);
    std::vector<double> o64, l64;
    cpu_ref::sparse_attention_f64(in.a, o64, l64);
    const auto so = cpu_ref::compare_values(cpu_ref::bf16_to_double(in.out.data(), int64_t(in.out.size())), o64,
                                            cpu_ref::kAttentionOutTol);
    const auto sl = cpu_ref::compare_values(cpu_ref::f32_to_double(in.lse.data(), int64_t(in.lse.size())), l64,
                                            cpu_ref::kAttentionLseTol);
    CHECK_MESSAGE(so.failures == 0, "K=" << k << " max abs " << so.max_abs);
    CHECK_MESSAGE(sl.failures == 0, "K=" << k << " lse max abs " << sl.max_abs);
  }
}

TEST_CASE("attention cpu_ref: an all -1 row gives o = 0 and lse = -inf; other rows are unaffected") {
  Inputs in = make(7, 2, 64, 70, 50);
  for (int j = 0; j < 70; ++j) in.idx[j] = -1;  // token 0
  bind(in);
  cpu_ref::sparse_attention(in.a);
  for (int i = 0; i < 64 * kMlaVDim; ++i) REQUIRE(in.out[i] == 0);
  for (int h = 0; h < 64; ++h) CHECK(in.lse[h] == -num::hs_inf());
  for (int h = 64; h < 128; ++h) CHECK(std::isfinite(in.lse[h]));
}

TEST_CASE("attention cpu_ref: a -1 tail (K' < K) gives the same bits as the short list") {
  Inputs full = make(9, 1, 128, 100, 200);
  Inputs short_list = full;
  short_list.idx.resize(77);
  short_list.a.top_k = 77;
  for (int j = 77; j < 100; ++j) full.idx[j] = -1;
  bind(full);
  bind(short_list);
  cpu_ref::sparse_attention(full.a);
  cpu_ref::sparse_attention(short_list.a);
  CHECK(cpu_ref::first_bits_mismatch(full.out.data(), short_list.out.data(), int64_t(full.out.size())) == -1);
  CHECK(cpu_ref::first_bits_mismatch(full.lse.data(), short_list.lse.data(), int64_t(full.lse.size())) == -1);
}

TEST_CASE("attention cpu_ref: bad arguments are rejected with the field named") {
  Inputs in = make(3, 1, 64, 4, 10);
  bind(in);
  in.idx[2] = 10;
  CHECK_THROWS_WITH_AS(cpu_ref::sparse_attention(in.a), doctest::Contains("indices[token 0][entry 2] = 10"), Error);
  in.idx[2] = -2;
  CHECK_THROWS_AS(cpu_ref::sparse_attention(in.a), Error);
  in.idx[2] = 0;
  in.a.heads = 32;
  CHECK_THROWS_WITH_AS(cpu_ref::sparse_attention(in.a), doctest::Contains("heads = 32"), Error);
}

TEST_CASE("attention compare: NaN never passes") {
  const num::Bf16Bits nan = 0x7fc0;
  CHECK(cpu_ref::first_bits_mismatch(&nan, &nan, 1) == 0);
  const auto st = cpu_ref::compare_values({std::nan("")}, {std::nan("")}, cpu_ref::kAttentionOutTol);
  CHECK(st.failures == 1);
}

TEST_CASE("compare_relative: within factor × the exact kernel's error (bar as floor); NaN, spurious inf, sign flips fail") {
  using cpu_ref::compare_relative;
  const cpu_ref::Tolerance bar{1e-3, 0.0};
  // ref 1.0: the exact kernel is off by 0.1, so the fast one may be off by 4 × 0.1 + 1e-3 = 0.401.
  const std::vector<double> ref = {1.0, 1.0, 2.0, 0.5, -0.5, 0.0005};
  const std::vector<double> exact = {1.1, 1.1, 2.0, 0.5, -0.5, 0.0005};
  std::vector<double> fast = {1.4, 0.6005, 2.0009, 0.5, -0.5, -0.0004};
  auto st = compare_relative(fast, exact, ref, bar, 4.0);
  CHECK(st.failures == 0);  // element 5: |ref| 0.0005 <= bar, so its sign may flip
  CHECK(st.worst_ratio == doctest::Approx(0.4 / 0.101));  // element 0: 0.4 against 0.1 + 1e-3
  fast[1] = 0.598;  // 0.402 > 0.401
  st = compare_relative(fast, exact, ref, bar, 4.0);
  CHECK(st.failures == 1);
  CHECK(st.first_failure == 1);
  fast[1] = 1.0;
  fast[3] = -0.5;  // a sign flip of an element clearly away from 0
  fast[2] = std::nan("");
  fast[4] = -INFINITY;
  st = compare_relative(fast, exact, ref, bar, 4.0);
  CHECK(st.sign_flips == 1);
  CHECK(st.nan_inf == 2);
  CHECK(st.failures == 3);
  CHECK(st.first_failure == 2);
}
