// @brief Launcher of the cluster swap-in kernel (cuda/swap_in_cluster.cu): a thread-block cluster per row, for
// batches too small to fill the GPU with one block per row.
#pragma once

#include <cuda_runtime.h>

#include "cuda/swap_in.h"

namespace hisparse::cuda::detail {

/// Launches the swap-in of `a` with `cluster` (1, 2, 4, 8 or 16) blocks per row, fusing the miss copy when
/// `fused_copy`. Returns false, having launched nothing, when that size cannot run here (shared memory or no
/// co-resident cluster) or the batch has more than `max_batch` rows (-1: more rows than the GPU runs at once,
/// per cudaOccupancyMaxActiveClusters); the caller then uses the one-block kernel.
bool swap_in_cluster_launch(const SwapInDeviceArgs& a, bool fused_copy, int cluster, int max_batch,
                            cudaStream_t stream);

}  // namespace hisparse::cuda::detail
