// @brief Umbrella header of the shared numerics (bf16, fp8, exp2/log2, online softmax, operation views).
#pragma once

#include "core/numerics/bf16.h"
#include "core/numerics/fp8.h"
#include "core/numerics/indexer_args.h"
#include "core/numerics/online_softmax.h"
#include "core/numerics/scalar_ops.h"
#include "core/numerics/sparse_attention_args.h"
#include "core/numerics/topk_args.h"
