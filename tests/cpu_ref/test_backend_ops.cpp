// @brief The attention, indexer and top-k operations through the Backend interface (CpuBackend): against independent
// float64 computations (not the functions the backend calls), the stated conventions, errors, and one decode step
// written against `Backend&` only.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "cpu_ref/backend_cpu.h"
#include "cpu_ref/sparse_attention.h"
#include "cpu_ref/sparse_attention_compare.h"
#include "cpu_ref/topk.h"

using namespace hisparse;

namespace {

float u_pm1(std::mt19937_64& g) { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; }

std::vector<num::Bf16Bits> random_bf16(std::mt19937_64& g, size_t n) {
  std::vector<num::Bf16Bits> v(n);
  for (auto& x : v) x = num::float_to_bf16(u_pm1(g));
  return v;
}

/// One decode step as a caller writes it, knowing only `Backend&`: indexer scores over the request's keys, top-k
/// positions, attention over those positions (the KV pool row of position p is p). Returns o and lse.
struct StepOutput {
  std::vector<int32_t> selected;
  std::vector<num::Bf16Bits> out;
  std::vector<float> lse;
};
StepOutput decode_step(Backend& be, int n_positions, int k, uint64_t seed) {
  std::mt19937_64 g(seed);
  const auto iq = random_bf16(g, size_t(kIndexerHeads) * kIndexerDim);
  const auto keys = random_bf16(g, size_t(n_positions) * kIndexerDim);
  std::vector<float> w(kIndexerHeads);
  for (auto& x : w) x = u_pm1(g);
  const int64_t start = 0;
  const int32_t len = n_positions;
  std::vector<float> scores(static_cast<size_t>(n_positions));
  IndexerArgs ia;
  ia.tokens = 1;
  ia.max_len = n_positions;
  ia.q = iq.data();
  ia.weights = w.data();
  ia.keys = keys.data();
  ia.key_rows = n_positions;
  ia.key_start = &start;
  ia.seq_len = &len;
  ia.scores = scores.data();
  be.indexer_scores(ia);

  StepOutput r;
  r.selected.assign(size_t(k), -7);
  TopkArgs ta;
  ta.rows = 1;
  ta.stride = n_positions;
  ta.k = k;
  ta.scores = scores.data();
  ta.length = &len;
  ta.out = r.selected.data();
  be.topk(ta);

  const int heads = 64;
  const auto q = random_bf16(g, size_t(heads) * kMlaQkDim);
  const auto kv = random_bf16(g, size_t(n_positions) * kMlaQkDim);
  r.out.assign(size_t(heads) * kMlaVDim, 0xffff);
  r.lse.assign(size_t(heads), num::canonical_nan_f32());
  SparseAttentionArgs a;
  a.tokens = 1;
  a.heads = heads;
  a.top_k = k;
  a.slots = n_positions;
  a.sm_scale = 1.0f / 24.0f;
  a.q = q.data();
  a.kv = kv.data();
  a.indices = r.selected.data();  // -1 padding of a short row is skipped by attention
  a.out = r.out.data();
  a.lse = r.lse.data();
  be.sparse_attention(a, AttentionVariant::kExact);
  return r;
}

}  // namespace

TEST_CASE("Backend attention (cpu): both variants within tolerance of an independent float64 attention; all -1 row "
          "gives o = 0, lse = -inf") {
  // The reference here is cpu_ref::sparse_attention_f64: plain double arithmetic (max, exp, sum, divide), a code path
  // that shares nothing with the fp32 online-softmax kernel behind the backend, so a wrong backend cannot agree with
  // it by construction.
  std::mt19937_64 g(31);
  const int tokens = 2, heads = 64, k = 70, slots = 50;
  const auto q = random_bf16(g, size_t(tokens) * heads * kMlaQkDim);
  const auto kv = random_bf16(g, size_t(slots) * kMlaQkDim);
  std::vector<int32_t> idx(size_t(tokens) * k);
  for (auto& v : idx) v = g() % 4 == 0 ? -1 : int32_t(g() % slots);
  std::fill(idx.begin() + k, idx.end(), -1);  // token 1: every entry skipped
  const size_t no = size_t(tokens) * heads * kMlaVDim, nl = size_t(tokens) * heads;
  SparseAttentionArgs a;
  a.tokens = tokens;
  a.heads = heads;
  a.top_k = k;
  a.slots = slots;
  a.sm_scale = 0.0721687836f;
  a.q = q.data();
  a.kv = kv.data();
  a.indices = idx.data();
  std::vector<num::Bf16Bits> unused_o(no);
  std::vector<float> unused_l(nl);
  a.out = unused_o.data();  // the argument check wants every buffer; the float64 result goes to o64 / l64
  a.lse = unused_l.data();
  std::vector<double> o64, l64;
  cpu_ref::sparse_attention_f64(a, o64, l64);
  cpu_ref::CpuBackend cpu;
  Backend& be = cpu;
  for (AttentionVariant v : {AttentionVariant::kExact, AttentionVariant::kFast}) {
    CAPTURE(attention_variant_name(v));
    std::vector<num::Bf16Bits> o(no, 0xffff);
    std::vector<float> l(nl, num::canonical_nan_f32());
    a.out = o.data();
    a.lse = l.data();
    be.sparse_attention(a, v);
    // Token 0 against float64 (token 1 has no entry: its conventions are checked exactly below).
    const size_t o0 = size_t(heads) * kMlaVDim, l0 = size_t(heads);
    const auto st_o = cpu_ref::compare_values(cpu_ref::bf16_to_double(o.data(), int64_t(o0)),
                                              std::vector<double>(o64.begin(), o64.begin() + o0), cpu_ref::kAttentionOutTol);
    const auto st_l = cpu_ref::compare_values(cpu_ref::f32_to_double(l.data(), int64_t(l0)),
                                              std::vector<double>(l64.begin(), l64.begin() + l0), cpu_ref::kAttentionLseTol);
    CHECK(st_o.failures == 0);
    CHECK(st_l.failures == 0);
    CHECK(st_o.max_abs > 0);  // bf16 output of a 70-entry softmax cannot equal float64 everywhere: the check is live
    for (size_t i = o0; i < no; ++i) REQUIRE(o[i] == 0);
    for (size_t h = l0; h < nl; ++h) CHECK(l[h] == -num::hs_inf());
    CHECK(std::isfinite(l[0]));
  }
  CHECK(std::string(attention_variant_name(AttentionVariant::kExact)) == "exact");
  CHECK(std::string(attention_variant_name(AttentionVariant::kFast)) == "fast");
}

TEST_CASE("Backend attention (cpu): an index outside the pool is rejected with the entry named") {
  std::mt19937_64 g(32);
  const auto q = random_bf16(g, size_t(64) * kMlaQkDim);
  const auto kv = random_bf16(g, size_t(4) * kMlaQkDim);
  std::vector<int32_t> idx = {0, 4};
  std::vector<num::Bf16Bits> o(64 * kMlaVDim);
  std::vector<float> l(64);
  SparseAttentionArgs a;
  a.tokens = 1;
  a.heads = 64;
  a.top_k = 2;
  a.slots = 4;
  a.sm_scale = 0.1f;
  a.q = q.data();
  a.kv = kv.data();
  a.indices = idx.data();
  a.out = o.data();
  a.lse = l.data();
  cpu_ref::CpuBackend cpu;
  CHECK_THROWS_WITH_AS(cpu.sparse_attention(a, AttentionVariant::kFast), doctest::Contains("entry 1] = 4"), Error);
  a.heads = 96;
  CHECK_THROWS_WITH_AS(cpu.sparse_attention(a, AttentionVariant::kExact), doctest::Contains("heads = 96"), Error);
}

TEST_CASE("Backend topk (cpu): worked example, ties to the smaller position, NaN lowest, short rows padded") {
  const float nan = std::nanf("");
  // row 0: keys 3 at positions 1, 2, 4; K = 2 takes positions 1 and 2 (ties to the smaller position).
  // row 1: NaN ranks below -inf: K = 2 of {NaN, -inf, -0, +0, NaN} takes -0 (pos 2) and +0 (pos 3), which tie.
  // row 2: length 1 < K: position 0 then -1.
  const std::vector<float> s = {1, 3, 3, 2, 3, nan, -INFINITY, -0.0f, 0.0f, nan, 5, 9, 9, 9, 9};
  const std::vector<int32_t> len = {5, 5, 1};
  std::vector<int32_t> out(6, -7);
  TopkArgs a;
  a.rows = 3;
  a.stride = 5;
  a.k = 2;
  a.scores = s.data();
  a.length = len.data();
  a.out = out.data();
  cpu_ref::CpuBackend cpu;
  Backend& be = cpu;
  be.topk(a);
  CHECK(out == std::vector<int32_t>{1, 2, 2, 3, 0, -1});
  a.k = 4;
  out.assign(12, -7);
  a.out = out.data();
  be.topk(a);
  CHECK(out == std::vector<int32_t>{1, 2, 3, 4, 0, 1, 2, 3, 0, -1, -1, -1});  // row 1: NaN at 0 beats NaN at 4
  a.k = 0;
  CHECK_THROWS_WITH_AS(be.topk(a), doctest::Contains("k = 0"), Error);
}

TEST_CASE("Backend indexer (cpu): an independent float64 score, -inf past seq_len, a key range outside `keys` rejected") {
  // score[s] = Σ_h w[h] · max(0, q_h · k_(start+s)), computed here in double from the same bf16 inputs.
  std::mt19937_64 g(33);
  const auto q = random_bf16(g, size_t(kIndexerHeads) * kIndexerDim);
  const auto keys = random_bf16(g, size_t(20) * kIndexerDim);
  std::vector<float> w(kIndexerHeads);
  for (auto& x : w) x = u_pm1(g);
  int64_t start = 3;
  const int32_t len = 12;
  std::vector<float> got(16, num::canonical_nan_f32());
  IndexerArgs a;
  a.tokens = 1;
  a.max_len = 16;
  a.q = q.data();
  a.weights = w.data();
  a.keys = keys.data();
  a.key_rows = 20;
  a.key_start = &start;
  a.seq_len = &len;
  a.scores = got.data();
  cpu_ref::CpuBackend cpu;
  cpu.indexer_scores(a);
  for (int s = 0; s < len; ++s) {
    CAPTURE(s);
    double ref = 0, scale = 0;
    for (int h = 0; h < kIndexerHeads; ++h) {
      double dot = 0, mag = 0;
      for (int d = 0; d < kIndexerDim; ++d) {
        const double x = num::bf16_to_float(q[size_t(h) * kIndexerDim + d]);
        const double y = num::bf16_to_float(keys[size_t(start + s) * kIndexerDim + d]);
        dot += x * y;
        mag += std::fabs(x * y);
      }
      ref += w[size_t(h)] * std::max(0.0, dot);
      scale += std::fabs(w[size_t(h)]) * mag;
    }
    // fp32 sums of 128 products per head and 64 heads: error ≤ (128 + 64) × 2^-24 × Σ|terms|, with room to spare.
    CHECK(std::fabs(double(got[size_t(s)]) - ref) <= 256 * std::ldexp(scale, -24) + 1e-30);
  }
  for (int s = len; s < 16; ++s) CHECK(got[size_t(s)] == -num::hs_inf());
  start = 10;
  CHECK_THROWS_WITH_AS(cpu.indexer_scores(a), doctest::Contains("outside the 20 key rows"), Error);
}

TEST_CASE("Backend: one decode step written against Backend& is deterministic and selects the best scores") {
  cpu_ref::CpuBackend cpu;
  const StepOutput a = decode_step(cpu, 300, 64, 77), b = decode_step(cpu, 300, 64, 77);
  CHECK(a.selected == b.selected);
  CHECK(std::memcmp(a.out.data(), b.out.data(), a.out.size() * 2) == 0);
  for (size_t i = 1; i < a.selected.size(); ++i) CHECK(a.selected[i - 1] < a.selected[i]);
  // A request shorter than K: all positions, then -1 entries that attention skips.
  const StepOutput c = decode_step(cpu, 40, 64, 78);
  for (int i = 0; i < 64; ++i) CHECK(c.selected[size_t(i)] == (i < 40 ? i : -1));
  for (float l : c.lse) CHECK(std::isfinite(l));
}
