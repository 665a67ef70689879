// @brief IndexShare / IndexCache's top-k schedule: which decoder layers run their own indexer and top-k (anchors)
// and which reuse the nearest anchor below them. vLLM and SGLang's rule (GLM-5.2: index_topk_freq 4,
// index_skip_topk_offset 3 → layers 0, 1, 2, 6, 10, ..., 74, 21 of 78): layer l (0-based) skips its top-k iff
// max(l − offset + 1, 0) mod freq ≠ 0. Shared by ModelSpec and the trace layer's shared-layer view.
#pragma once

namespace hisparse {

inline bool is_topk_anchor(int layer, int freq, int offset) {
  const int g = freq > 1 ? freq : 1;
  const int shifted = layer - offset + 1;
  return (shifted > 0 ? shifted : 0) % g == 0;
}

/// The anchor whose top-k layer `layer` uses (itself for an anchor; layer 0 always is one).
inline int topk_anchor_of(int layer, int freq, int offset) {
  while (layer > 0 && !is_topk_anchor(layer, freq, offset)) --layer;
  return layer;
}

}  // namespace hisparse
