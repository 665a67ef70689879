// @brief Reference lightning-indexer scoring: ReLU'd per-head dot products weighted and summed in a fixed order.
#include "cpu_ref/indexer.h"

#include <vector>

#include "core/numerics/online_softmax.h"

namespace hisparse::cpu_ref {

void indexer_scores(const IndexerArgs& a) {
  using namespace num;
  check_indexer_args(a);
  if (a.tokens == 0 || a.max_len == 0) return;
  check_indexer_ranges(a);
  std::vector<float> qf(size_t(kIndexerHeads) * kIndexerDim), kf(kIndexerDim);
  for (int32_t t = 0; t < a.tokens; ++t) {
    const Bf16Bits* q = a.q + int64_t(t) * kIndexerHeads * kIndexerDim;
    for (size_t i = 0; i < qf.size(); ++i) qf[i] = bf16_to_float(q[i]);
    const float* w = a.weights + int64_t(t) * kIndexerHeads;
    float* row = a.scores + int64_t(t) * a.max_len;
    const int32_t n = a.seq_len[t];
    for (int32_t s = 0; s < n; ++s) {
      const Bf16Bits* k = a.keys + (a.key_start[t] + s) * kIndexerDim;
      for (int d = 0; d < kIndexerDim; ++d) kf[d] = bf16_to_float(k[d]);
      float acc = 0.0f;
      for (int h = 0; h < kIndexerHeads; ++h) {
        float dot = 0.0f;
        for (int d = 0; d < kIndexerDim; ++d) dot = dot_step(dot, qf[size_t(h) * kIndexerDim + d], kf[d]);
        acc = hs_fma(w[h], indexer_relu(dot), acc);
      }
      row[s] = acc;
    }
    for (int64_t s = n; s < a.max_len; ++s) row[s] = -hs_inf();
  }
}

}  // namespace hisparse::cpu_ref
