// @brief The operations of one decode layer of an MLA + DSA + MoE model (DeepSeek-V3.2, GLM-5) and the work each
// does at a batch and context length: FLOPs and the HBM bytes it must move at least. One list for the GPU benchmark
// that times them (`hisparse bench step`) and the calibration that fits and predicts them, so both count alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"

namespace hisparse {

struct DecodeOpWork {
  std::string op;      // q_a, indexer, moe_experts, ... (the `op` column of bench step)
  std::string family;  // gemm (projections, absorbed w_kv_b) | grouped_gemm | indexer | topk | attention | elementwise
  std::string dtype;   // fp8 | bf16 | fp32
  double flops = 0;    // 2 per multiply-add
  double bytes = 0;    // weights + activations in and out + caches read
  double tokens = 0;   // decode tokens of the call (the batch): a per-row cost (top-k's per-row select pass)
  double blocks = 0;   // thread blocks the project's kernel launches (0 = unknown): its time moves in whole waves
  double block_bytes = 0; // bytes each of those blocks reads (0 = unknown or equal for all): a wave of them takes
                          // longer the more each block reads (top-k's slice of a row)
  double pass_blocks = 0; // blocks of a second launch of the op, whose waves step on their own (0 = none): top-k's
                          // select pass, a block per row
  bool by_work = false; // its time depends on its work alone (bytes), in steps no roofline shape holds: the
                        // calibration fits a measured table over the work and whole waves of its blocks, and keeps
                        // the one that predicts left-out fit points better (the indexer: B x n)
  int per_layer = 1;   // times it runs in one MoE layer (the hidden-state norm runs twice)
  bool in_moe_layer = true;  // false: dense-MLP layers only (dense_gate_up, dense_down)
};

/// Routed experts on one GPU under expert parallelism `ep` with `batch` decode tokens per GPU (attention
/// data-parallel over the same GPUs): expected experts that receive a token, and tokens per such expert.
struct ExpertLoad {
  int active = 1;
  int tokens_per_expert = 1;
};
ExpertLoad expert_load(const ModelSpec& model, int batch, int ep);

/// Every op of one decode layer at `batch` tokens per GPU and context `context` (indexer, top-k); projections in
/// fp8 (as deployed), and once more in bf16 when `both_dtypes`. Top-k is `topk` when context > top_k and
/// `topk_all` (every position selected: a copy, a different kernel path) otherwise.
std::vector<DecodeOpWork> decode_layer_ops(const ModelSpec& model, int batch, int64_t context, int ep,
                                           bool both_dtypes = false);

/// The ops of one (batch, context) point that make up a MoE layer as `bench step` captures it: fp8 projections,
/// the fast attention kernel (the exact one when `exact_attention`), dense-MLP ops left out.
std::vector<DecodeOpWork> moe_layer_ops(const ModelSpec& model, int batch, int64_t context, int ep,
                                        bool exact_attention = false);

}  // namespace hisparse
