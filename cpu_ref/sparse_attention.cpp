// @brief Reference sparse MLA decode attention (bit-exact fp32 order of online_softmax.h, and float64).
#include "cpu_ref/sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/numerics/online_softmax.h"

namespace hisparse::cpu_ref {
namespace {

bool entry_valid(int32_t slot, int64_t slots) { return slot >= 0 && slot < slots; }

void attention_row(const SparseAttentionArgs& a, int32_t t, int32_t h, std::vector<float>& qf,
                   std::vector<float>& tile_t, std::vector<float>& acc) {
  using namespace num;
  const Bf16Bits* q = a.q + (int64_t(t) * a.heads + h) * kMlaQkDim;
  for (int d = 0; d < kMlaQkDim; ++d) qf[d] = bf16_to_float(q[d]);
  const int32_t* idx = a.indices + int64_t(t) * a.top_k;
  const float c = softmax_scale(a.sm_scale);
  float m = -hs_inf(), l = 0.0f;
  std::fill(acc.begin(), acc.end(), 0.0f);
  for (int32_t j0 = 0; j0 < a.top_k; j0 += kAttentionTileKeys) {
    const int32_t n = std::min(kAttentionTileKeys, a.top_k - j0);
    float tile_max = -hs_inf();
    for (int32_t j = 0; j < n; ++j) {
      const int32_t slot = idx[j0 + j];
      float tj = -hs_inf();
      if (entry_valid(slot, a.slots)) {
        const Bf16Bits* k = a.kv + int64_t(slot) * kMlaQkDim;
        float s = 0.0f;
        for (int d = 0; d < kMlaQkDim; ++d) s = dot_step(s, qf[d], bf16_to_float(k[d]));
        tj = s * c;
      }
      tile_t[j] = tj;
      tile_max = hs_max(tile_max, tj);
    }
    const float m_new = hs_max(m, tile_max);
    const float alpha = softmax_rescale(m, m_new);
    l = l * alpha;
    for (int32_t j = 0; j < n; ++j) {
      tile_t[j] = softmax_weight(tile_t[j], m_new);  // now p_j
      l = l + tile_t[j];
    }
    for (int cc = 0; cc < kMlaVDim; ++cc) acc[cc] = acc[cc] * alpha;
    for (int32_t j = 0; j < n; ++j) {
      const int32_t slot = idx[j0 + j];
      const float p = tile_t[j];
      if (entry_valid(slot, a.slots)) {
        const Bf16Bits* v = a.kv + int64_t(slot) * kMlaQkDim;
        for (int cc = 0; cc < kMlaVDim; ++cc) acc[cc] = hs_fma(p, bf16_to_float(v[cc]), acc[cc]);
      } else {
        for (int cc = 0; cc < kMlaVDim; ++cc) acc[cc] = hs_fma(p, 0.0f, acc[cc]);
      }
    }
    m = m_new;
  }
  Bf16Bits* o = a.out + (int64_t(t) * a.heads + h) * kMlaVDim;
  for (int cc = 0; cc < kMlaVDim; ++cc) o[cc] = softmax_output(acc[cc], l);
  a.lse[int64_t(t) * a.heads + h] = softmax_lse(m, l);
}

}  // namespace

void sparse_attention(const SparseAttentionArgs& args) {
  check_sparse_attention_args(args);
  check_sparse_attention_indices(args);
  std::vector<float> qf(kMlaQkDim), tile_t(num::kAttentionTileKeys), acc(kMlaVDim);
  for (int32_t t = 0; t < args.tokens; ++t)
    for (int32_t h = 0; h < args.heads; ++h) attention_row(args, t, h, qf, tile_t, acc);
}

namespace {

/// The float64 two-pass softmax over any KV row source: kv_at(slot) points at the slot's 576 values, kv_value reads one.
template <typename Row, typename Value>
void attention_f64(const SparseAttentionArgs& a, Row kv_at, Value kv_value, std::vector<double>& out64,
                   std::vector<double>& lse64) {
  out64.assign(size_t(a.tokens) * a.heads * kMlaVDim, 0.0);
  lse64.assign(size_t(a.tokens) * a.heads, -std::numeric_limits<double>::infinity());
  std::vector<double> s(size_t(a.top_k));
  for (int32_t t = 0; t < a.tokens; ++t) {
    const int32_t* idx = a.indices + int64_t(t) * a.top_k;
    for (int32_t h = 0; h < a.heads; ++h) {
      const num::Bf16Bits* q = a.q + (int64_t(t) * a.heads + h) * kMlaQkDim;
      double mx = -std::numeric_limits<double>::infinity();
      for (int32_t j = 0; j < a.top_k; ++j) {
        s[j] = -std::numeric_limits<double>::infinity();
        if (!entry_valid(idx[j], a.slots)) continue;
        const auto k = kv_at(idx[j]);
        double d = 0.0;
        for (int e = 0; e < kMlaQkDim; ++e) d += double(num::bf16_to_float(q[e])) * kv_value(k, e);
        s[j] = d * double(a.sm_scale);
        mx = std::max(mx, s[j]);
      }
      if (mx == -std::numeric_limits<double>::infinity()) continue;
      double sum = 0.0;
      double* o = out64.data() + (size_t(t) * a.heads + h) * kMlaVDim;
      for (int32_t j = 0; j < a.top_k; ++j) {
        if (!entry_valid(idx[j], a.slots)) continue;
        const double p = std::exp(s[j] - mx);
        sum += p;
        const auto v = kv_at(idx[j]);
        for (int c = 0; c < kMlaVDim; ++c) o[c] += p * kv_value(v, c);
      }
      for (int c = 0; c < kMlaVDim; ++c) o[c] /= sum;
      lse64[size_t(t) * a.heads + h] = mx + std::log(sum);
    }
  }
}

}  // namespace

void sparse_attention_f64(const SparseAttentionArgs& a, std::vector<double>& out64, std::vector<double>& lse64) {
  check_sparse_attention_args(a);
  check_sparse_attention_indices(a);
  attention_f64(
      a, [&](int32_t slot) { return a.kv + int64_t(slot) * kMlaQkDim; },
      [](const num::Bf16Bits* row, int e) { return double(num::bf16_to_float(row[e])); }, out64, lse64);
}

void sparse_attention_f64(const SparseAttentionArgs& a, const std::vector<double>& kv64, std::vector<double>& out64,
                          std::vector<double>& lse64) {
  if (a.slots < 0 || kv64.size() != size_t(a.slots) * kMlaQkDim)
    throw_error("sparse_attention_f64: kv64 holds {} values, expected slots {} x {}", kv64.size(), a.slots, kMlaQkDim);
  SparseAttentionArgs shape = a;  // the rows come from kv64: args.kv is not read, so it is not required
  shape.kv = nullptr;
  shape.slots = 0;
  check_sparse_attention_args(shape);
  check_sparse_attention_indices(a);
  attention_f64(
      a, [&](int32_t slot) { return kv64.data() + int64_t(slot) * kMlaQkDim; },
      [](const double* row, int e) { return row[e]; }, out64, lse64);
}

}  // namespace hisparse::cpu_ref
