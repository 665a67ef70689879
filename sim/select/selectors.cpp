// @brief The selectors of the selection study; see selectors.h for what each computes.
#include "sim/select/selectors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"

namespace hisparse::sim::select {
namespace {

int32_t group_of(int32_t h, int32_t q_heads, int32_t kv_heads) { return h / (q_heads / kv_heads); }

void check_query(const LayerKeys& keys, const Query& q) {
  if (q.n < 1 || q.n > keys.n_keys) throw_error("select: n = {} outside [1, {}] (keys recorded)", q.n, keys.n_keys);
  if (q.q_heads < keys.kv_heads || q.q_heads % keys.kv_heads != 0)
    throw_error("select: {} query heads is not a multiple of {} KV heads", q.q_heads, keys.kv_heads);
}

/// logits[j] = q · k_{j,g} for j < n, through the transposed keys (per j the sum runs over d in order).
void dot_all(const LayerKeys& keys, int32_t g, const float* q, int32_t n, std::vector<float>& logits) {
  logits.assign(static_cast<size_t>(n), 0.0f);
  float* out = logits.data();
  for (int32_t d = 0; d < keys.head_dim; ++d) {
    const float qd = q[d];
    const float* col = keys.col(g, d);
    for (int32_t j = 0; j < n; ++j) out[j] += qd * col[j];
  }
}

/// Positions sorted by score descending, ties by position ascending; keeps the first min(k, n).
std::vector<int32_t> rank(const std::vector<double>& score, int32_t n, int32_t k) {
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  const auto better = [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); };
  const int32_t m = std::min(k, n);
  if (m < n) std::nth_element(idx.begin(), idx.begin() + m, idx.end(), better);
  idx.resize(static_cast<size_t>(m));
  std::sort(idx.begin(), idx.end(), better);
  return idx;
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

LayerKeys::LayerKeys(std::vector<float> rows_, int32_t n_keys_, int32_t kv_heads_, int32_t head_dim_)
    : n_keys(n_keys_), kv_heads(kv_heads_), head_dim(head_dim_), rows(std::move(rows_)) {
  if (rows.size() != static_cast<size_t>(n_keys) * kv_heads * head_dim)
    throw_error("select: {} key values for [{}, {}, {}]", rows.size(), n_keys, kv_heads, head_dim);
  kt.resize(rows.size());
  for (int32_t j = 0; j < n_keys; ++j)
    for (int32_t g = 0; g < kv_heads; ++g)
      for (int32_t d = 0; d < head_dim; ++d) kt[(static_cast<size_t>(g) * head_dim + d) * n_keys + j] = row(j, g)[d];
}

void add_softmax(const std::vector<float>& logits, float scaling, int32_t n, std::vector<double>& e,
                 std::vector<double>& score) {
  e.resize(static_cast<size_t>(n));
  double m = -std::numeric_limits<double>::infinity();
  for (int32_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(scaling) * logits[j]);
  double z = 0;
  for (int32_t j = 0; j < n; ++j) z += (e[j] = std::exp(static_cast<double>(scaling) * logits[j] - m));
  for (int32_t j = 0; j < n; ++j) score[j] += e[j] / z;
}

std::vector<double> true_scores(const LayerKeys& keys, const Query& query) {
  check_query(keys, query);
  const int32_t n = query.n;
  std::vector<double> score(static_cast<size_t>(n), 0.0);
  std::vector<float> logits;
  std::vector<double> e;
  for (int32_t h = 0; h < query.q_heads; ++h) {
    dot_all(keys, group_of(h, query.q_heads, keys.kv_heads), query.head(h, keys.head_dim), n, logits);
    add_softmax(logits, query.scaling, n, e, score);
  }
  return score;
}

std::vector<int32_t> top_k_by_score(const std::vector<double>& score, int32_t n, int32_t k) { return rank(score, n, k); }

std::vector<int32_t> sink_recent_select(int32_t n, int32_t k, int32_t sinks) {
  std::vector<int32_t> out;
  if (n <= k) {
    for (int32_t j = 0; j < n; ++j) out.push_back(j);
    return out;
  }
  const int32_t s = std::clamp(sinks, 0, k);
  for (int32_t j = 0; j < s; ++j) out.push_back(j);
  for (int32_t j = n - (k - s); j < n; ++j) out.push_back(j);
  return out;
}

IndexerStandIn build_indexer(const LayerKeys& keys, int32_t prefill, int32_t dims, int32_t heads_per_group) {
  if (dims < 1 || dims > keys.head_dim) throw_error("select: --indexer-dims {} outside [1, {}]", dims, keys.head_dim);
  if (prefill < 1 || prefill > keys.n_keys) throw_error("select: prefill {} outside [1, {}]", prefill, keys.n_keys);
  IndexerStandIn ix;
  ix.heads_per_group = heads_per_group;
  for (int32_t g = 0; g < keys.kv_heads; ++g) {
    std::vector<double> energy(static_cast<size_t>(keys.head_dim), 0.0);
    for (int32_t j = 0; j < prefill; ++j)
      for (int32_t d = 0; d < keys.head_dim; ++d) energy[d] += static_cast<double>(keys.row(j, g)[d]) * keys.row(j, g)[d];
    std::vector<int32_t> order = rank(energy, keys.head_dim, dims);
    std::sort(order.begin(), order.end());
    ix.dims.push_back(order);
  }
  return ix;
}

std::vector<double> indexer_scores(const IndexerStandIn& ix, const LayerKeys& keys, const Query& query) {
  check_query(keys, query);
  const int32_t group = query.q_heads / keys.kv_heads;
  if (ix.heads_per_group < 1 || ix.heads_per_group > group)
    throw_error("select: --indexer-heads {} outside [1, {}] (query heads per KV head)", ix.heads_per_group, group);
  const int32_t n = query.n;
  std::vector<double> score(static_cast<size_t>(n), 0.0);
  std::vector<float> acc;
  for (int32_t g = 0; g < keys.kv_heads; ++g) {
    for (int32_t i = 0; i < ix.heads_per_group; ++i) {
      const float* q = query.head(g * group + i, keys.head_dim);
      acc.assign(static_cast<size_t>(n), 0.0f);
      for (int32_t d : ix.dims[g]) {
        const float* col = keys.col(g, d);
        for (int32_t j = 0; j < n; ++j) acc[j] += q[d] * col[j];
      }
      for (int32_t j = 0; j < n; ++j) score[j] += std::max(0.0f, acc[j]);
    }
  }
  return score;
}

float quest_bound(const float* q, const float* mn, const float* mx, int32_t head_dim) {
  float u = 0;
  for (int32_t d = 0; d < head_dim; ++d) u += std::max(q[d] * mn[d], q[d] * mx[d]);
  return u;
}

QuestPages build_quest_pages(const LayerKeys& keys, int32_t page_size) {
  if (page_size < 1) throw_error("select: --page-size {} must be >= 1", page_size);
  QuestPages p;
  p.page_size = page_size;
  p.pages = (keys.n_keys + page_size - 1) / page_size;
  const size_t sz = static_cast<size_t>(keys.kv_heads) * p.pages * keys.head_dim;
  p.mins.assign(sz, std::numeric_limits<float>::infinity());
  p.maxs.assign(sz, -std::numeric_limits<float>::infinity());
  for (int32_t g = 0; g < keys.kv_heads; ++g)
    for (int32_t j = 0; j < keys.n_keys; ++j) {
      const size_t base = (static_cast<size_t>(g) * p.pages + j / page_size) * keys.head_dim;
      for (int32_t d = 0; d < keys.head_dim; ++d) {
        p.mins[base + d] = std::min(p.mins[base + d], keys.row(j, g)[d]);
        p.maxs[base + d] = std::max(p.maxs[base + d], keys.row(j, g)[d]);
      }
    }
  return p;
}

std::vector<double> quest_page_scores(const QuestPages& pages, const LayerKeys& keys, const Query& query) {
  check_query(keys, query);
  const int32_t n = query.n, P = pages.page_size, D = keys.head_dim;
  const int32_t np = (n + P - 1) / P;
  const bool partial = n % P != 0;  // the newest page is not full yet: its box covers only positions < n
  std::vector<float> pmin(static_cast<size_t>(keys.kv_heads) * D), pmax(pmin.size());
  if (partial) {
    for (int32_t g = 0; g < keys.kv_heads; ++g)
      for (int32_t d = 0; d < D; ++d) {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int32_t j = (np - 1) * P; j < n; ++j) lo = std::min(lo, keys.row(j, g)[d]), hi = std::max(hi, keys.row(j, g)[d]);
        pmin[static_cast<size_t>(g) * D + d] = lo, pmax[static_cast<size_t>(g) * D + d] = hi;
      }
  }
  std::vector<double> page_score(static_cast<size_t>(np), 0.0), u(static_cast<size_t>(np));
  for (int32_t h = 0; h < query.q_heads; ++h) {
    const int32_t g = group_of(h, query.q_heads, keys.kv_heads);
    const float* q = query.head(h, D);
    double m = -std::numeric_limits<double>::infinity();
    for (int32_t p = 0; p < np; ++p) {
      const bool last = partial && p == np - 1;
      const size_t base = (static_cast<size_t>(g) * pages.pages + p) * D;
      const float* mn = last ? &pmin[static_cast<size_t>(g) * D] : &pages.mins[base];
      const float* mx = last ? &pmax[static_cast<size_t>(g) * D] : &pages.maxs[base];
      u[p] = static_cast<double>(query.scaling) * quest_bound(q, mn, mx, D);
      m = std::max(m, u[p]);
    }
    double z = 0;
    for (int32_t p = 0; p < np; ++p) z += (u[p] = std::min(P, n - p * P) * std::exp(u[p] - m));
    for (int32_t p = 0; p < np; ++p) page_score[p] += u[p] / z;
  }
  return page_score;
}

std::vector<int32_t> quest_select(const QuestPages& pages, const LayerKeys& keys, const Query& query, int32_t k) {
  const std::vector<double> page_score = quest_page_scores(pages, keys, query);
  const int32_t n = query.n, P = pages.page_size, np = static_cast<int32_t>(page_score.size());
  std::vector<int32_t> out;
  for (int32_t p : rank(page_score, np, np)) {
    for (int32_t j = p * P; j < std::min(n, (p + 1) * P) && static_cast<int32_t>(out.size()) < k; ++j) out.push_back(j);
    if (static_cast<int32_t>(out.size()) >= k) break;
  }
  return out;
}

KMeansResult kmeans(const float* x, int32_t n, int32_t dim, int32_t clusters, int32_t max_iters, uint64_t seed) {
  if (clusters < 1 || n < clusters) throw_error("select: k-means of {} points into {} clusters", n, clusters);
  KMeansResult r;
  r.clusters = clusters, r.dim = dim;
  r.centroids.resize(static_cast<size_t>(clusters) * dim);
  std::mt19937_64 rng(seed);
  auto dist2 = [dim](const float* a, const float* b) {
    double s = 0;
    for (int32_t d = 0; d < dim; ++d) s += (static_cast<double>(a[d]) - b[d]) * (static_cast<double>(a[d]) - b[d]);
    return s;
  };
  // k-means++ (Arthur & Vassilvitskii 2007): first centre uniform, each next one with probability ∝ D(x)^2.
  int32_t first = static_cast<int32_t>(uniform01(rng) * n);
  std::copy(x + static_cast<size_t>(first) * dim, x + static_cast<size_t>(first + 1) * dim, r.centroids.begin());
  std::vector<double> best(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) best[i] = dist2(x + static_cast<size_t>(i) * dim, r.centroids.data());
  for (int32_t c = 1; c < clusters; ++c) {
    double total = 0;
    for (double b : best) total += b;
    int32_t pick = n - 1;
    if (total > 0) {
      double t = uniform01(rng) * total, acc = 0;
      for (int32_t i = 0; i < n; ++i)
        if ((acc += best[i]) > t) {
          pick = i;
          break;
        }
    } else {
      pick = c;  // every point already sits on a centre (duplicates): any point will do
    }
    float* cc = r.centroids.data() + static_cast<size_t>(c) * dim;
    std::copy(x + static_cast<size_t>(pick) * dim, x + static_cast<size_t>(pick + 1) * dim, cc);
    for (int32_t i = 0; i < n; ++i) best[i] = std::min(best[i], dist2(x + static_cast<size_t>(i) * dim, cc));
  }
  // Lloyd. Distances to all centroids of one point: ||c||^2 - 2 x·c over centroids stored transposed, so the inner
  // loop runs over clusters (vectorises; each dot product is still summed over d in order).
  r.assign.assign(static_cast<size_t>(n), -1);
  std::vector<float> ct(static_cast<size_t>(dim) * clusters), cn(static_cast<size_t>(clusters)), dots;
  for (int32_t it = 0; it < max_iters; ++it) {
    for (int32_t c = 0; c < clusters; ++c) {
      float s = 0;
      for (int32_t d = 0; d < dim; ++d) {
        const float v = r.centroids[static_cast<size_t>(c) * dim + d];
        ct[static_cast<size_t>(d) * clusters + c] = v;
        s += v * v;
      }
      cn[c] = s;
    }
    bool changed = false;
    for (int32_t i = 0; i < n; ++i) {
      dots.assign(static_cast<size_t>(clusters), 0.0f);
      const float* xi = x + static_cast<size_t>(i) * dim;
      for (int32_t d = 0; d < dim; ++d) {
        const float v = xi[d];
        const float* row = &ct[static_cast<size_t>(d) * clusters];
        for (int32_t c = 0; c < clusters; ++c) dots[c] += v * row[c];
      }
      int32_t bc = 0;
      float bd = cn[0] - 2 * dots[0];
      for (int32_t c = 1; c < clusters; ++c)
        if (cn[c] - 2 * dots[c] < bd) bd = cn[c] - 2 * dots[c], bc = c;
      if (r.assign[i] != bc) r.assign[i] = bc, changed = true;
    }
    r.iterations = it + 1;
    // Stop when stable, or after the last assignment: assign[] is then each point's nearest centroid.
    if (!changed || it + 1 == max_iters) break;
    std::vector<double> sum(static_cast<size_t>(clusters) * dim, 0.0);
    std::vector<int64_t> cnt(static_cast<size_t>(clusters), 0);
    for (int32_t i = 0; i < n; ++i) {
      ++cnt[r.assign[i]];
      for (int32_t d = 0; d < dim; ++d) sum[static_cast<size_t>(r.assign[i]) * dim + d] += x[static_cast<size_t>(i) * dim + d];
    }
    for (int32_t c = 0; c < clusters; ++c)
      if (cnt[c] > 0)  // an empty cluster keeps its centroid
        for (int32_t d = 0; d < dim; ++d)
          r.centroids[static_cast<size_t>(c) * dim + d] = static_cast<float>(sum[static_cast<size_t>(c) * dim + d] / cnt[c]);
  }
  return r;
}

ClusterIndex build_cluster_index(const LayerKeys& keys, int32_t prefill, int32_t clusters, int32_t max_iters,
                                 uint64_t seed) {
  if (prefill < clusters || prefill > keys.n_keys)
    throw_error("select: {} prefill positions cannot form --clusters {} (of {} keys)", prefill, clusters, keys.n_keys);
  ClusterIndex ix;
  ix.clusters = clusters;
  const int32_t D = keys.head_dim;
  for (int32_t g = 0; g < keys.kv_heads; ++g) {
    std::vector<float> pts(static_cast<size_t>(prefill) * D);
    for (int32_t j = 0; j < prefill; ++j) std::copy(keys.row(j, g), keys.row(j, g) + D, pts.begin() + static_cast<size_t>(j) * D);
    // One seed per KV head, derived so that heads do not share a sequence.
    KMeansResult km = kmeans(pts.data(), prefill, D, clusters, max_iters, seed + static_cast<uint64_t>(g));
    std::vector<int32_t> a = km.assign;
    a.resize(static_cast<size_t>(keys.n_keys));
    for (int32_t j = prefill; j < keys.n_keys; ++j) {
      int32_t bc = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (int32_t c = 0; c < clusters; ++c) {
        double s = 0;
        for (int32_t d = 0; d < D; ++d) {
          const double diff = static_cast<double>(keys.row(j, g)[d]) - km.centroids[static_cast<size_t>(c) * D + d];
          s += diff * diff;
        }
        if (s < bd) bd = s, bc = c;
      }
      a[j] = bc;
    }
    ix.per_head.push_back(std::move(km));
    ix.assign.push_back(std::move(a));
  }
  return ix;
}

std::vector<double> clusterkv_scores(const ClusterIndex& index, const LayerKeys& keys, const Query& query) {
  check_query(keys, query);
  const int32_t n = query.n, C = index.clusters, D = keys.head_dim;
  std::vector<std::vector<double>> w(static_cast<size_t>(keys.kv_heads), std::vector<double>(static_cast<size_t>(C), 0.0));
  std::vector<double> size(static_cast<size_t>(C)), u(static_cast<size_t>(C));
  for (int32_t g = 0; g < keys.kv_heads; ++g) {
    std::fill(size.begin(), size.end(), 0.0);
    for (int32_t j = 0; j < n; ++j) size[index.assign[g][j]] += 1;
    for (int32_t h = 0; h < query.q_heads; ++h) {
      if (group_of(h, query.q_heads, keys.kv_heads) != g) continue;
      const float* q = query.head(h, D);
      double m = -std::numeric_limits<double>::infinity();
      for (int32_t c = 0; c < C; ++c) {
        float s = 0;
        for (int32_t d = 0; d < D; ++d) s += q[d] * index.per_head[g].centroids[static_cast<size_t>(c) * D + d];
        u[c] = static_cast<double>(query.scaling) * s;
        if (size[c] > 0) m = std::max(m, u[c]);
      }
      double z = 0;
      for (int32_t c = 0; c < C; ++c) z += size[c] * std::exp(u[c] - m);
      for (int32_t c = 0; c < C; ++c) w[g][c] += std::exp(u[c] - m) / z;
    }
  }
  std::vector<double> score(static_cast<size_t>(n), 0.0);
  for (int32_t g = 0; g < keys.kv_heads; ++g)
    for (int32_t j = 0; j < n; ++j) score[j] += w[g][index.assign[g][j]];
  return score;
}

std::vector<int32_t> clusterkv_select(const ClusterIndex& index, const LayerKeys& keys, const Query& query, int32_t k) {
  return rank(clusterkv_scores(index, keys, query), query.n, k);
}

double selected_mass(const std::vector<double>& score, const std::vector<int32_t>& selected) {
  std::vector<int32_t> s;
  for (int32_t p : selected)
    if (p >= 0) s.push_back(p);
  std::sort(s.begin(), s.end());
  double m = 0;
  for (int32_t p : s) m += score[p];
  return m;
}

}  // namespace hisparse::sim::select
