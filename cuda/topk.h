// @brief Host-callable launchers of top-k selection (integer-exact with cpu_ref::topk).
#pragma once

#include "core/numerics/topk_args.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

/// Device pointers; asynchronous. One block per row: radix select on the 32-bit score key (11+11+10 bits), then
/// one ordered pass that writes the winners by ascending position.
void topk_device(const TopkArgs& args, StreamHandle stream = nullptr);

/// Host pointers: checks, uploads, runs, downloads (output poisoned on the device first).
void topk_host(const TopkArgs& args);

}  // namespace hisparse::cuda
