// @brief Reference lightning-indexer scoring: ReLU'd per-head dot products weighted and summed in a fixed order
// (bf16 q and keys, or fp8 E4M3 q and keys with a per-row key scale).
#include "cpu_ref/indexer.h"

#include <vector>

#include "core/numerics/online_softmax.h"

namespace hisparse::cpu_ref {
namespace {

/// Every token's row of scores: its q decoded once, each scored position's key row decoded, then
/// score(q, w, k, key row) on the decoded values; positions past seq_len are -inf.
template <typename Code, typename Decode, typename Score>
void score_rows(const IndexerArgs& a, const Code* q_codes, const Code* key_codes, Decode decode, Score score) {
  std::vector<float> qf(size_t(kIndexerHeads) * kIndexerDim), kf(kIndexerDim);
  for (int32_t t = 0; t < a.tokens; ++t) {
    const Code* q = q_codes + int64_t(t) * kIndexerHeads * kIndexerDim;
    for (size_t i = 0; i < qf.size(); ++i) qf[i] = decode(q[i]);
    const float* w = a.weights + int64_t(t) * kIndexerHeads;
    float* row = a.scores + int64_t(t) * a.max_len;
    const int32_t n = a.seq_len[t];
    for (int32_t s = 0; s < n; ++s) {
      const int64_t r = a.key_start[t] + s;
      const Code* k = key_codes + r * kIndexerDim;
      for (int d = 0; d < kIndexerDim; ++d) kf[d] = decode(k[d]);
      row[s] = score(qf.data(), w, kf.data(), r);
    }
    for (int64_t s = n; s < a.max_len; ++s) row[s] = -num::hs_inf();
  }
}

}  // namespace

void indexer_scores(const IndexerArgs& a) {
  using namespace num;
  check_indexer_args(a);
  if (a.tokens == 0 || a.max_len == 0) return;
  check_indexer_ranges(a);
  if (a.dtype == IndexerDtype::kFp8E4m3) {
    // The order of num::indexer_fp8_score, which the CUDA kernel calls too.
    const auto fp8_score = [&](const float* q, const float* w, const float* k, int64_t r) {
      return indexer_fp8_score(q, w, k, a.key_scale[r]);
    };
    score_rows(a, a.q_fp8, a.keys_fp8, fp8_e4m3_to_float, fp8_score);
    return;
  }
  score_rows(a, a.q, a.keys, bf16_to_float, [](const float* q, const float* w, const float* k, int64_t) {
    float acc = 0.0f;
    for (int h = 0; h < kIndexerHeads; ++h) {
      float dot = 0.0f;
      for (int d = 0; d < kIndexerDim; ++d) dot = dot_step(dot, q[size_t(h) * kIndexerDim + d], k[d]);
      acc = hs_fma(w[h], indexer_relu(dot), acc);
    }
    return acc;
  });
}

}  // namespace hisparse::cpu_ref
