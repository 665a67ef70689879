// @brief Page-level selection helpers and the per-KV-head scope; see page_select.h.
#include "sim/select/page_select.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace hisparse::sim::select {
namespace {

int32_t page_count(int32_t n, int32_t page_size) {
  if (page_size < 1) throw_error("select: page size {} must be >= 1", page_size);
  return (n + page_size - 1) / page_size;
}

}  // namespace

std::vector<double> page_sums(const std::vector<double>& score, int32_t n, int32_t page_size) {
  std::vector<double> out(static_cast<size_t>(page_count(n, page_size)), 0.0);
  for (int32_t j = 0; j < n; ++j) out[j / page_size] += score[j];
  return out;
}

std::vector<double> page_maxima(const std::vector<double>& score, int32_t n, int32_t page_size) {
  std::vector<double> out(static_cast<size_t>(page_count(n, page_size)), 0.0);
  for (int32_t j = 0; j < n; ++j) out[j / page_size] = j % page_size == 0 ? score[j] : std::max(out[j / page_size], score[j]);
  return out;
}

std::vector<int32_t> top_pages(const std::vector<double>& page_score, int32_t pages) {
  return top_k_by_score(page_score, static_cast<int32_t>(page_score.size()), pages);
}

std::vector<int32_t> sink_recent_pages(int32_t n, int32_t page_size, int32_t pages, int32_t sinks) {
  const int32_t np = page_count(n, page_size);
  std::vector<int32_t> out;
  if (np <= pages) {
    for (int32_t p = 0; p < np; ++p) out.push_back(p);
    return out;
  }
  const int32_t s = std::min(pages, page_count(std::max(sinks, 0), page_size));
  for (int32_t p = 0; p < s; ++p) out.push_back(p);
  for (int32_t p = np - (pages - s); p < np; ++p) out.push_back(p);
  return out;
}

std::vector<int32_t> page_positions(const std::vector<int32_t>& pages, int32_t n, int32_t page_size) {
  std::vector<int32_t> out;
  for (int32_t p : pages)
    for (int32_t j = p * page_size; j < std::min(n, (p + 1) * page_size); ++j) out.push_back(j);
  return out;
}

LayerKeys head_keys(const LayerKeys& keys, int32_t g) {
  if (g < 0 || g >= keys.kv_heads) throw_error("select: KV head {} outside [0, {})", g, keys.kv_heads);
  std::vector<float> rows(static_cast<size_t>(keys.n_keys) * keys.head_dim);
  for (int32_t j = 0; j < keys.n_keys; ++j)
    std::copy(keys.row(j, g), keys.row(j, g) + keys.head_dim, rows.begin() + static_cast<std::ptrdiff_t>(j) * keys.head_dim);
  return LayerKeys(std::move(rows), keys.n_keys, 1, keys.head_dim);
}

Query head_query(const Query& query, int32_t kv_heads, int32_t head_dim, int32_t g) {
  const int32_t group = query.q_heads / kv_heads;
  Query q = query;
  q.q = query.head(g * group, head_dim);
  q.q_heads = group;
  return q;
}

IndexerStandIn head_indexer(const IndexerStandIn& ix, int32_t g) {
  IndexerStandIn out;
  out.heads_per_group = ix.heads_per_group;
  out.dims = {ix.dims.at(static_cast<size_t>(g))};
  return out;
}

ClusterIndex head_clusters(const ClusterIndex& ci, int32_t g) {
  ClusterIndex out;
  out.clusters = ci.clusters;
  out.per_head = {ci.per_head.at(static_cast<size_t>(g))};
  out.assign = {ci.assign.at(static_cast<size_t>(g))};
  return out;
}

}  // namespace hisparse::sim::select
