// @brief Host-callable launchers of lightning-indexer scoring (bit-exact with cpu_ref::indexer_scores).
#pragma once

#include "core/numerics/indexer_args.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

/// Device pointers (q, keys and their fp8 counterparts 16-byte aligned); asynchronous; args.dtype picks the bf16
/// or the fp8 kernel. Rows outside the key rows are the caller's responsibility (see the host entry point).
void indexer_scores_device(const IndexerArgs& args, StreamHandle stream = nullptr);

/// Host pointers: checks, uploads, runs, downloads (scores poisoned on the device first).
void indexer_scores_host(const IndexerArgs& args);

}  // namespace hisparse::cuda
