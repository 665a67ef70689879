// @brief KernelConfig: the launch choices of the CUDA kernels (which swap-in kernel runs at which batch, top-k
// split), set explicitly by whoever constructs the backend (`validate`, `bench`: --kernel-config) instead of
// being read from the environment. Plain C++: a CPU-only build parses and prints it too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hisparse::cuda {

/// Which swap-in kernel runs for a batch. The defaults are the ones measured fastest on the lent H200
/// (bench/results/swap_in_copy_sweeps_h200_2026-11-22/README.md); every value is bit-exact with the CPU reference
/// (scripts/gpu_check.sh validates each non-default one).
struct SwapInKernelConfig {
  int cluster = 8;           // blocks per row of the cluster kernel for small batches: 1, 2, 4, 8, 16; 0 = never
  int cluster_max_batch = 8; // batches of at most this many rows are small; -1 = as many rows as run at once
  bool large_batch_cluster = false;  // larger batches: false = the one-block kernel, true = cluster kernel, 1 block
  int table_bits = 1;        // cluster kernel: hash table 2^bits times the one-block kernel's (0..2)
  bool pdl = true;           // programmatic dependent launch: overlaps the launch with the previous kernel's tail
  bool phase_timer = false;  // cluster kernel: the phase-timed instance (`bench swap-in` prints its table)
  bool operator==(const SwapInKernelConfig& o) const {
    return cluster == o.cluster && cluster_max_batch == o.cluster_max_batch &&
           large_batch_cluster == o.large_batch_cluster && table_bits == o.table_bits && pdl == o.pdl &&
           phase_timer == o.phase_timer;
  }
};

/// How top-k splits a row over blocks (cuda/topk.cu).
struct TopkKernelConfig {
  int blocks_per_sm = 0;      // resident blocks per SM the split assumes; 0 = the occupancy calculator's figure
  int64_t min_chunk = 2048;   // smallest slice of a row one block takes
  bool operator==(const TopkKernelConfig& o) const {
    return blocks_per_sm == o.blocks_per_sm && min_chunk == o.min_chunk;
  }
};

struct KernelConfig {
  SwapInKernelConfig swap_in;
  TopkKernelConfig topk;
  bool operator==(const KernelConfig& o) const { return swap_in == o.swap_in && topk == o.topk; }
  bool operator!=(const KernelConfig& o) const { return !(*this == o); }
};

/// Parses "key=value,key=value" (or "default") on top of the defaults. Unknown keys, malformed or out-of-range
/// values are errors naming the key, the value and what is expected.
KernelConfig parse_kernel_config(std::string_view spec);

/// The canonical spec of `config`: only the keys that differ from the default, "default" when none does;
/// parse_kernel_config(to_spec(c)) == c.
std::string to_spec(const KernelConfig& config);

/// Help text: one line per key with its values and default.
std::string kernel_config_help();

/// Throws if one of the environment variables that used to choose kernel variants is set: they are no longer
/// read, and a run that silently ignored one would measure or validate something other than what was asked.
void reject_retired_kernel_env();

}  // namespace hisparse::cuda
