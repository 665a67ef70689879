// @brief Launcher of the cluster swap-in kernel (cuda/swap_in_cluster.cu): a thread-block cluster per row, for
// batches too small to fill the GPU with one block per row; plus its optional per-phase timer (bench only).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/kernel_config.h"
#include "cuda/swap_in.h"

namespace hisparse::cuda::detail {

/// Launches the swap-in of `a` with `o.cluster` blocks per row (hash table o.table_bits larger, shrunk down to
/// the one-block kernel's where it does not fit in shared memory), fusing the miss copy when `fused_copy`. Returns
/// false, having launched nothing, when that size cannot run here (shared memory or no co-resident cluster) or the
/// batch has more than `max_batch` rows (-1: more rows than the GPU runs at once, per
/// cudaOccupancyMaxActiveClusters); the caller then uses the one-block kernel.
bool swap_in_cluster_launch(const SwapInDeviceArgs& a, bool fused_copy, const SwapInKernelConfig& o, int max_batch,
                            cudaStream_t stream);

// Phase timer: with SwapInKernelConfig::phase_timer, thread 0 of every block of batch row 0 stamps %globaltimer and
// clock64 at each phase boundary (kSwapInPhaseMarks marks) and, at the end of a call, stores them as record
// (its call count mod kSwapInPhaseCap) of its block rank. Only the slow path without errors is recorded.
constexpr int kSwapInPhaseMarks = 9;
constexpr int kSwapInPhaseCap = 256;
constexpr int kSwapInPhaseBlocks = 16;

/// Name of the interval that ends at mark p (p >= 1).
const char* swap_in_phase_name(int p);

struct SwapInPhaseRecords {
  std::vector<uint32_t> count;         // [block] calls recorded by each block rank
  std::vector<unsigned long long> gt;  // [call][block][mark] %globaltimer, ns
  std::vector<long long> clk;          // [call][block][mark] clock64 of the block's SM
};

/// Forgets every record (synchronous).
void swap_in_phases_reset();
/// Copies the records back (synchronous).
SwapInPhaseRecords swap_in_phases_read();

}  // namespace hisparse::cuda::detail
