// @brief Host-callable launchers of top-k selection (integer-exact with cpu_ref::topk).
#pragma once

#include <cstddef>

#include "core/numerics/topk_args.h"
#include "cuda/kernel_config.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

/// Device bytes of scratch that topk_device needs for this shape (rows, stride; the split depends on the SM count
/// and `config`). Every config selects the same positions.
size_t topk_workspace_bytes(const TopkArgs& args, const TopkKernelConfig& config);

/// Blocks per row of the split topk_device would use for this shape (bench reporting).
int topk_blocks_per_row(const TopkArgs& args, const TopkKernelConfig& config);

/// Device pointers; asynchronous. Several blocks per row (see topk.cu): a histogram pass, a pass that keeps the
/// keys at or above the threshold's top digit in position order, then per row radix select of the threshold key
/// on a 12/12/8-bit split and one ordered pass over those kept keys that writes the winners by ascending position.
/// `workspace` (device, >= topk_workspace_bytes) is used by this call only until it completes on `stream`.
void topk_device(const TopkArgs& args, void* workspace, size_t workspace_bytes, const TopkKernelConfig& config,
                 StreamHandle stream = nullptr);

/// The same with a stream-ordered workspace (cudaMallocAsync / cudaFreeAsync on `stream`).
void topk_device(const TopkArgs& args, const TopkKernelConfig& config, StreamHandle stream = nullptr);

/// Host pointers: checks, uploads, runs, downloads (output poisoned on the device first).
void topk_host(const TopkArgs& args, const TopkKernelConfig& config);

}  // namespace hisparse::cuda
