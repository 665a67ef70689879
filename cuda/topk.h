// @brief Host-callable launchers of top-k selection (integer-exact with cpu_ref::topk).
#pragma once

#include <cstddef>

#include "core/numerics/topk_args.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

/// Device bytes of scratch that topk_device needs for this shape (rows, stride; the split depends on the SM count).
size_t topk_workspace_bytes(const TopkArgs& args);

/// Blocks per row of the split topk_device would use for this shape (bench reporting; knobs in topk.cu).
int topk_blocks_per_row(const TopkArgs& args);

/// Device pointers; asynchronous. Several blocks per row (see topk.cu): a histogram pass, a pass that keeps the
/// keys at or above the threshold's top digit in position order, then per row radix select of the threshold key
/// on a 12/12/8-bit split and one ordered pass over those kept keys that writes the winners by ascending position.
/// `workspace` (device, >= topk_workspace_bytes) is used by this call only until it completes on `stream`.
void topk_device(const TopkArgs& args, void* workspace, size_t workspace_bytes, StreamHandle stream = nullptr);

/// The same with a stream-ordered workspace (cudaMallocAsync / cudaFreeAsync on `stream`).
void topk_device(const TopkArgs& args, StreamHandle stream = nullptr);

/// Host pointers: checks, uploads, runs, downloads (output poisoned on the device first).
void topk_host(const TopkArgs& args);

}  // namespace hisparse::cuda
