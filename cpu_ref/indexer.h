// @brief Reference lightning-indexer scoring, bf16 or fp8 keys (fixed orders of core/numerics/indexer_args.h;
// bit-exact with CUDA).
#pragma once

#include "core/numerics/indexer_args.h"

namespace hisparse::cpu_ref {

/// Host pointers; checks shapes and ranges first (hisparse::Error).
void indexer_scores(const IndexerArgs& args);

}  // namespace hisparse::cpu_ref
