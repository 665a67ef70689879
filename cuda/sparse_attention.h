// @brief Host-callable launchers of sparse MLA decode attention: the bit-exact CUDA-core kernel and the fast
// tensor-core kernel (no CUDA headers here).
#pragma once

#include "core/numerics/sparse_attention_args.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

enum class AttentionKernel {
  kExact,  // CUDA cores, fp32 fma in the order of core/numerics/online_softmax.h: same bits as cpu_ref
  kFast,   // tensor cores (bf16 wgmma, fp32 accumulate; sm_90a builds): within tolerance of float64, NOT bit-exact
};
const char* attention_kernel_name(AttentionKernel kernel);
/// The implementation behind kFast on this build: "wgmma", or why there is none (a build without sm_90a).
const char* fast_attention_variant();

/// Device pointers in `args`. Asynchronous on `stream`. Indices outside [0, slots) are treated as -1 (the
/// host-pointer entry point below rejects them instead). Shape errors throw hisparse::Error.
void sparse_attention_device(const SparseAttentionArgs& args, AttentionKernel kernel, StreamHandle stream = nullptr);

/// Host pointers in `args`: checks shapes and indices, uploads, runs, downloads (outputs poisoned on the device
/// first, so an element the kernel fails to write shows up as NaN).
void sparse_attention_host(const SparseAttentionArgs& args, AttentionKernel kernel);

}  // namespace hisparse::cuda
