// @brief `hisparse bench step`: every operation of one decode layer of a DeepSeek-V3.2-style model (MLA + DSA
// indexer + MoE) timed on the GPU at the model's real shapes, over batch sizes and context lengths; the raw rows
// a calibration fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "cuda/kernel_config.h"

namespace hisparse::bench {

struct StepBenchOptions {
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};  // decode tokens per GPU
  std::vector<int64_t> contexts = {4096, 16384, 65536};          // tokens per request (indexer, top-k)
  int ep = 8;             // expert-parallel size: routed experts per GPU = routed_experts / ep; tokens routed to
                          // them come from batch x ep tokens (attention data-parallel over the same GPUs)
  int reps = 20;          // calls captured in one CUDA graph (time per call = replay / reps)
  int iters = 10;         // graph replays (median reported)
  uint64_t seed = 1;
  cuda::KernelConfig kernels;
};

struct StepBenchRow {
  std::string op;       // e.g. q_a, indexer, moe_experts
  std::string family;   // gemm | grouped_gemm | indexer | topk | attention | elementwise | graph_gap | layer
  std::string dtype;    // bf16 | fp8 | fp32 | -
  std::string impl;     // who implements it: project kernel, cuBLASLt, project elementwise kernel
  int batch = 0;
  int64_t context = 0;  // 0 where the op does not depend on it
  double median_us = 0;
  double flops = 0;     // per call, 2 per multiply-add
  double bytes = 0;     // per call, HBM bytes the op must move at least (weights + activations + caches)
};

/// Rows of every op at every batch (and context where it matters), plus one `layer` row per (batch, context): the
/// whole MoE layer captured as one graph, against which the sum of its ops is checked. Progress on stderr.
std::vector<StepBenchRow> bench_step(const ModelSpec& model, const StepBenchOptions& options);

}  // namespace hisparse::bench
