// @brief Double Sparsity's label-cache selector and the study's bytes-read model (see double_sparse.h).
#include "sim/select/double_sparse.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hisparse::sim::select {

DoubleSparseChannels build_double_sparse(const LayerKeys& keys, int32_t prefill, int32_t channels) {
  if (channels < 1 || channels > keys.head_dim)
    throw_error("select: --ds-channels {} outside [1, {}] (head_dim)", channels, keys.head_dim);
  if (prefill < 1 || prefill > keys.n_keys) throw_error("select: prefill {} outside [1, {}]", prefill, keys.n_keys);
  DoubleSparseChannels ds;
  for (int32_t g = 0; g < keys.kv_heads; ++g) {
    std::vector<double> magnitude(static_cast<size_t>(keys.head_dim), 0.0);
    for (int32_t j = 0; j < prefill; ++j)
      for (int32_t d = 0; d < keys.head_dim; ++d) magnitude[d] += std::fabs(static_cast<double>(keys.row(j, g)[d]));
    std::vector<int32_t> order = top_k_by_score(magnitude, keys.head_dim, channels);
    std::sort(order.begin(), order.end());
    ds.channels.push_back(std::move(order));
  }
  return ds;
}

std::vector<double> double_sparse_scores(const DoubleSparseChannels& ds, const LayerKeys& keys, const Query& query) {
  if (static_cast<int32_t>(ds.channels.size()) != keys.kv_heads)
    throw_error("select: double-sparse channels for {} KV heads, keys have {}", ds.channels.size(), keys.kv_heads);
  if (query.n < 1 || query.n > keys.n_keys || query.q_heads % keys.kv_heads != 0)
    throw_error("select: query n {} / {} heads against {} keys of {} KV heads", query.n, query.q_heads, keys.n_keys,
                keys.kv_heads);
  const int32_t n = query.n, group = query.q_heads / keys.kv_heads;
  std::vector<double> score(static_cast<size_t>(n), 0.0), e;
  std::vector<float> acc;
  for (int32_t h = 0; h < query.q_heads; ++h) {
    const int32_t g = h / group;
    const float* q = query.head(h, keys.head_dim);
    acc.assign(static_cast<size_t>(n), 0.0f);
    for (int32_t d : ds.channels[g]) {
      const float* col = keys.col(g, d);
      for (int32_t j = 0; j < n; ++j) acc[j] += q[d] * col[j];
    }
    add_softmax(acc, query.scaling, n, e, score);
  }
  return score;
}

DoubleSparseChannels head_double_sparse(const DoubleSparseChannels& ds, int32_t g) {
  DoubleSparseChannels out;
  out.channels = {ds.channels.at(static_cast<size_t>(g))};
  return out;
}

double selector_score_bytes(const std::string& selector, int32_t n, int32_t kv_heads, int32_t head_dim,
                            double elem_bytes, int32_t indexer_dims, int32_t quest_page, int32_t clusters,
                            int32_t ds_channels) {
  const double N = n, G = kv_heads, D = head_dim, e = elem_bytes;
  if (selector == "oracle") return N * G * D * e;
  if (selector == "indexer") return N * G * indexer_dims * e;
  if (selector == "quest") return std::ceil(N / std::max(1, quest_page)) * G * D * 2 * e;
  if (selector == "clusterkv") return static_cast<double>(clusters) * G * D * e + N * G * 4;
  if (selector == "sink-recent") return 0;
  if (selector == "double-sparse") return N * G * ds_channels * e;
  throw_error("select: no bytes model for selector '{}'", selector);
}

}  // namespace hisparse::sim::select
