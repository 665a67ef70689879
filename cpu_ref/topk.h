// @brief Reference top-k selection (order of core/numerics/topk_args.h; integer-exact with CUDA).
#pragma once

#include "core/numerics/topk_args.h"

namespace hisparse::cpu_ref {

/// Host pointers; checks shapes and lengths first (hisparse::Error).
void topk(const TopkArgs& args);

}  // namespace hisparse::cpu_ref
