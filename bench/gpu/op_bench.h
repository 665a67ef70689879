// @brief GPU timings of sparse attention (exact and fast) and top-k, for `hisparse bench attention|topk`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernel_config.h"

namespace hisparse::bench {

struct OpBenchRow {
  std::string op, config, kernel;
  double median_us = 0;   // per call
  double per_row_us = 0;  // top-k: per row
  double tflops = 0;      // attention: FLOP/s in units of 1e12 (2 per multiply-add, QK and PV)
  std::string target, verdict;
};

struct OpBenchOptions {
  int iters = 20;
  uint64_t seed = 1;
  cuda::KernelConfig kernels;  // top-k split (--kernel-config)
};

/// Configurations: batch 64 x 128 heads x K 2048 (the targets), batch 64 x 64 heads, batch 1 x 128 heads.
std::vector<OpBenchRow> bench_attention(const OpBenchOptions& opt);
/// Top-k 2048 of 131,072 fp32 scores at batch 1 and batch 64.
std::vector<OpBenchRow> bench_topk(const OpBenchOptions& opt);

}  // namespace hisparse::bench
