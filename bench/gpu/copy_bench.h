// @brief GPU kernel benchmarks behind `hisparse bench`: CUDA events, medians, and the bulk-copy ceilings measured in
// the same run so every rate is reported as a fraction of what this host's PCIe link actually delivers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernel_config.h"

namespace hisparse::bench {

struct BenchOptions {
  int iters = 30;      // timed repetitions per configuration (median reported)
  uint64_t seed = 1;
  bool sweep = true;   // swap-in: also the batch x miss-rate sweep (calibration data)
  bool copy_engine = true;  // gather/backup: also the copy-engine rows (seconds each: a cudaMemcpy per row)
  cuda::KernelConfig kernels;  // the variants timed (--kernel-config)
};

struct BenchRow {
  std::string op;          // swap-in | gather | backup | bulk
  std::string config;      // sizes, e.g. "B=100 H=4096 K=2048 miss=20%"
  std::string mode;        // fused | separate | copy-engine | zero-copy | plan-only | per-call | back-to-back
  double median_us = 0;    // per call
  double bytes = 0;        // bytes moved per call (0 = none counted)
  double gbps = 0;         // bytes / median time, GB/s (1e9)
  double ceiling_gbps = 0; // bulk pinned cudaMemcpy of the same bytes, same direction, this run
  std::string target;      // the target, if this row has one
  std::string verdict;     // "ok" | "MISS" | ""
  // Calibration inputs.
  int32_t batch = 0;
  double miss_rate = 0;
  int64_t rows = 0;        // rows copied per call
};

std::vector<BenchRow> bench_swap_in(const BenchOptions& options);
std::vector<BenchRow> bench_gather(const BenchOptions& options);
std::vector<BenchRow> bench_backup(const BenchOptions& options);
/// Bulk pinned cudaMemcpy host->device and device->host of 256 MiB (op "bulk", mode h2d|d2h): the link's ceiling.
std::vector<BenchRow> bench_bulk(const BenchOptions& options);
/// The layout-aware host-pool copies (bench/gpu/io_bench.cu): per layout, a per-layer gather and an all-layer
/// backup at DeepSeek-V3.2's MLA shape and Llama-3.1-8B's GQA shape, each beside a bulk cudaMemcpy of the same
/// bytes (CUDA-graph replays, both).
std::vector<BenchRow> bench_layouts(const BenchOptions& options);
/// DeltaKV reconstruction (op "deltakv"): rows of 576 elements, 1 / 4 / 16 references; `rows` = rows per call.
std::vector<BenchRow> bench_deltakv(const BenchOptions& options);

}  // namespace hisparse::bench
