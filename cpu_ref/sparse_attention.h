// @brief Reference sparse MLA decode attention: the bit-exact fp32 reference and a float64 reference.
#pragma once

#include <vector>

#include "core/numerics/sparse_attention_args.h"

namespace hisparse::cpu_ref {

/// Follows core/numerics/online_softmax.h operation by operation; the exact CUDA kernel gives the same bits.
/// Host pointers. Checks shapes and indices first (hisparse::Error).
void sparse_attention(const SparseAttentionArgs& args);

/// Float64 reference of the same function (two-pass softmax, no tiles), for tolerance checks of both kernels.
/// out64: [T][H][512], lse64: [T][H] (natural log; -inf for all-skipped rows, whose out64 is 0).
void sparse_attention_f64(const SparseAttentionArgs& args, std::vector<double>& out64, std::vector<double>& lse64);

/// The same float64 reference over KV rows given as doubles, kv64 [slots][576] (args.kv is not read): for a cache
/// whose values are not bf16, such as FlashMLA's fp8 layout dequantized exactly (cpu_ref/mla_fp8_cache.h).
void sparse_attention_f64(const SparseAttentionArgs& args, const std::vector<double>& kv64, std::vector<double>& out64,
                          std::vector<double>& lse64);

}  // namespace hisparse::cpu_ref
