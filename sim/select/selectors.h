// @brief The token selectors of the selection study (docs/selection.md): the true attention score and its oracle
// top-k, a DSA-style indexer stand-in, Quest page bounds, ClusterKV centroids and sink + recent window. Each works on
// one layer and one decode step: the query heads q[q_heads][D] of the token at position n-1 and the keys of
// positions 0..n-1 (GQA: query head h reads KV head h / (q_heads / kv_heads)). Every selector returns at most k
// distinct positions in [0, n), best first; ties are broken by the lower position, so results are deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::sim::select {

/// One layer's keys: rows [n_keys][kv_heads][head_dim] as recorded, and a transposed copy [kv_heads][head_dim][n_keys]
/// so that scoring every position against one query runs over contiguous positions (vectorises without reordering
/// any sum: each position's dot product is still summed over d in order).
struct LayerKeys {
  int32_t n_keys = 0, kv_heads = 0, head_dim = 0;
  std::vector<float> rows;
  std::vector<float> kt;
  LayerKeys() = default;
  LayerKeys(std::vector<float> rows_, int32_t n_keys_, int32_t kv_heads_, int32_t head_dim_);
  const float* row(int32_t j, int32_t g) const { return rows.data() + (static_cast<size_t>(j) * kv_heads + g) * head_dim; }
  const float* col(int32_t g, int32_t d) const { return kt.data() + (static_cast<size_t>(g) * head_dim + d) * n_keys; }
};

/// One query: q[q_heads][head_dim] of the decoded token, the softmax scaling, and n (positions 0..n-1 visible).
struct Query {
  const float* q = nullptr;
  int32_t q_heads = 0;
  float scaling = 1.0f;
  int32_t n = 0;
  const float* head(int32_t h, int32_t head_dim) const { return q + static_cast<size_t>(h) * head_dim; }
};

/// score[j] += softmax_j(scaling · logits[j]) over j < n, in double (`e`: scratch space of the caller).
void add_softmax(const std::vector<float>& logits, float scaling, int32_t n, std::vector<double>& e,
                 std::vector<double>& score);
/// True score of every position j < n: Σ_h softmax_j(scaling · q_h · k_{j, g(h)}) (so Σ_j score = q_heads).
std::vector<double> true_scores(const LayerKeys& keys, const Query& query);

/// The min(k, n) positions of highest score, highest first; equal scores: lower position first.
std::vector<int32_t> top_k_by_score(const std::vector<double>& score, int32_t n, int32_t k);

/// StreamingLLM: positions 0..sinks-1 and the newest k - sinks, ascending (all n when n <= k).
std::vector<int32_t> sink_recent_select(int32_t n, int32_t k, int32_t sinks);

// ---- DSA-style indexer stand-in ----
/// SmolLM2 has no trained indexer (DeepSeek-V3.2's lightning indexer: Σ_h w_h · ReLU(q_h · k_j) with its own low-dim
/// heads). Stand-in: per KV head g, the `dims` dimensions of highest mean squared key over the prefill, and
/// `heads_per_group` query heads of each GQA group (the first ones); score_j = Σ_h ReLU(q_h[dims] · k_{j,g}[dims]),
/// every weight 1.
struct IndexerStandIn {
  int32_t heads_per_group = 1;
  std::vector<std::vector<int32_t>> dims;  // [kv_heads][dims], ascending
};
IndexerStandIn build_indexer(const LayerKeys& keys, int32_t prefill, int32_t dims, int32_t heads_per_group);
std::vector<double> indexer_scores(const IndexerStandIn& ix, const LayerKeys& keys, const Query& query);

// ---- Quest ----
/// Quest's bound of q · k over a page: Σ_d max(q_d · min_d, q_d · max_d) >= q · k for every key k of the page.
float quest_bound(const float* q, const float* page_min, const float* page_max, int32_t head_dim);
/// Per KV head, per page of `page_size` consecutive positions: the element-wise min and max of its keys,
/// [kv_heads][pages][head_dim]. Built over all n_keys; a page that is not yet full at a step is recomputed then.
struct QuestPages {
  int32_t page_size = 16;
  int32_t pages = 0;  // ceil(n_keys / page_size)
  std::vector<float> mins, maxs;
};
QuestPages build_quest_pages(const LayerKeys& keys, int32_t page_size);
/// Page score of every page of positions < n (GQA, one list per layer): Σ_h size_p · exp(scaling · U_h(p)) /
/// Σ_p' size_p' · exp(scaling · U_h(p')), U_h the Quest bound of head h (the newest, partial page boxed over < n).
std::vector<double> quest_page_scores(const QuestPages& pages, const LayerKeys& keys, const Query& query);
/// Page score (GQA, one list per layer): Σ_h size_p · exp(scaling · U_h(p)) / Σ_p' size_p' · exp(scaling · U_h(p')),
/// U_h the Quest bound of head h. Pages best first (ties: lower page), then their positions ascending, up to k.
std::vector<int32_t> quest_select(const QuestPages& pages, const LayerKeys& keys, const Query& query, int32_t k);

// ---- ClusterKV ----
struct KMeansResult {
  int32_t clusters = 0, dim = 0;
  std::vector<float> centroids;  // [clusters][dim]
  std::vector<int32_t> assign;   // [points]
  int32_t iterations = 0;        // Lloyd iterations run (stops early when no assignment changes)
};
/// Seeded k-means: k-means++ initialisation (std::mt19937_64(seed), whose sequence the C++ standard fixes; uniform
/// doubles from its top 53 bits), then Lloyd iterations (squared Euclidean distance; ties: lower cluster; an empty
/// cluster keeps its centroid). points [n][dim], n >= clusters >= 1.
KMeansResult kmeans(const float* points, int32_t n, int32_t dim, int32_t clusters, int32_t max_iters, uint64_t seed);
/// Per KV head: k-means over the keys of the prefill positions 0..prefill-1; each later position joins its nearest
/// centroid (centroids stay as built at prefill).
struct ClusterIndex {
  int32_t clusters = 0;
  std::vector<KMeansResult> per_head;     // [kv_heads]
  std::vector<std::vector<int32_t>> assign;  // [kv_heads][n_keys]
};
ClusterIndex build_cluster_index(const LayerKeys& keys, int32_t prefill, int32_t clusters, int32_t max_iters,
                                 uint64_t seed);
/// Token score: Σ_h exp(scaling · q_h · μ_c) / Σ_c' size_c'(n) · exp(scaling · q_h · μ_c'), c the cluster of the token
/// under head h's KV head (the softmax if every key equalled its centroid); sizes count positions < n. For one head this
/// ranks whole clusters by centroid score, so the best clusters' tokens come first, up to k (ties: lower position).
std::vector<double> clusterkv_scores(const ClusterIndex& index, const LayerKeys& keys, const Query& query);
std::vector<int32_t> clusterkv_select(const ClusterIndex& index, const LayerKeys& keys, const Query& query, int32_t k);

/// Σ score over `selected` (positions, -1 ignored), summed in ascending position order so that two lists holding the
/// same set give bit-identical sums.
double selected_mass(const std::vector<double>& score, const std::vector<int32_t>& selected);

}  // namespace hisparse::sim::select
