// @brief Page granularity and per-KV-head scope of the selection study (docs/selection.md, "Page granularity",
// "Per-KV-head selection"). A page p of P tokens holds positions [p·P, min(n, (p+1)·P)); a page selector returns page
// ids best first (ties: lower page), at most the budget K/P. A KV head's scope is the same problem cut down to one KV
// head and its query heads, so every token or page selector runs on it unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/select/selectors.h"

namespace hisparse::sim::select {

/// Per page of positions < n: the sum of `score` over its positions (ascending, so equal sets give equal bits).
std::vector<double> page_sums(const std::vector<double>& score, int32_t n, int32_t page_size);
/// Per page of positions < n: the largest `score` of its positions.
std::vector<double> page_maxima(const std::vector<double>& score, int32_t n, int32_t page_size);
/// The min(pages, ceil(n/P)) pages of highest score, best first; ties: lower page.
std::vector<int32_t> top_pages(const std::vector<double>& page_score, int32_t pages);
/// StreamingLLM in pages: the pages covering positions 0..sinks-1 (none when sinks = 0), then the newest pages, up to
/// `pages` in all, ascending (every page when ceil(n/P) <= pages).
std::vector<int32_t> sink_recent_pages(int32_t n, int32_t page_size, int32_t pages, int32_t sinks);
/// The positions < n of `pages`, page by page in list order, ascending inside a page.
std::vector<int32_t> page_positions(const std::vector<int32_t>& pages, int32_t n, int32_t page_size);

/// The keys of one KV head g as a one-head layer ([n_keys][1][head_dim]).
LayerKeys head_keys(const LayerKeys& keys, int32_t g);
/// The query heads of KV head g's group (GQA: heads g·q/kv .. (g+1)·q/kv - 1), for head_keys(keys, g).
Query head_query(const Query& query, int32_t kv_heads, int32_t head_dim, int32_t g);
/// KV head g's part of an index built over every KV head (same dims / centroids / assignments, not rebuilt).
IndexerStandIn head_indexer(const IndexerStandIn& ix, int32_t g);
ClusterIndex head_clusters(const ClusterIndex& ci, int32_t g);

}  // namespace hisparse::sim::select
