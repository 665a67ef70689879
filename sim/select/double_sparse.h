// @brief Double Sparsity's selector for the selection study (Yang et al. 2024, "Post-Training Sparse Attention with
// Double Sparsity"; SGLang --enable-double-sparsity): a label cache keeps each key on a few "heavy" channels per KV
// head, decode scores every token on those channels only and attends to the best heavy_token_num of them.
//
// Channels: DoubleSparse's offline calibration (andy-yang-1/DoubleSparse config/offline_calibration.py) ranks each
// head's channels by the mean over calibration tokens of |q ⊙ k| ("qk", SGLang's default --ds-heavy-channel-type),
// of |q| ("q") or of |k| ("k"). The recorded data hold queries of the decode steps only (the ones the study scores),
// so the study uses the "k" ranking over the prompt's keys (positions 0..prefill-1): calibrating on the scored
// queries would leak them. Per KV head g the channels are the `channels` of largest mean |k_{j,g,d}|, ties to the
// lower channel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/select/selectors.h"

namespace hisparse::sim::select {

struct DoubleSparseChannels {
  std::vector<std::vector<int32_t>> channels;  // [kv_heads][channels], ascending
};

/// The `channels` channels of largest mean |k| over positions 0..prefill-1, per KV head.
DoubleSparseChannels build_double_sparse(const LayerKeys& keys, int32_t prefill, int32_t channels);
/// Label score of every position j < n: Σ_h softmax_j(scaling · Σ_{d in C(g(h))} q_h[d] · k_{j,g(h)}[d]), the
/// attention mass each token would get if only the heavy channels existed (for one query head: the order of SGLang's
/// per-head top-k of the label logits).
std::vector<double> double_sparse_scores(const DoubleSparseChannels& ds, const LayerKeys& keys, const Query& query);
/// KV head g's channels, for head_keys(keys, g).
DoubleSparseChannels head_double_sparse(const DoubleSparseChannels& ds, int32_t g);

/// Modelled bytes a selector reads to score one step-layer of n positions, all KV heads, elements of `elem_bytes`
/// (docs/selection.md, "Bytes read"): oracle n·G·D (every key); indexer n·G·dims; quest ceil(n/P)·G·D·2 (page min and
/// max); clusterkv clusters·G·D + n·G·4/elem (centroids, int32 assignments); sink-recent 0; double-sparse n·G·channels
/// (the label cache). `quest_page` is Quest's page P.
double selector_score_bytes(const std::string& selector, int32_t n, int32_t kv_heads, int32_t head_dim,
                            double elem_bytes, int32_t indexer_dims, int32_t quest_page, int32_t clusters,
                            int32_t ds_channels);

}  // namespace hisparse::sim::select
