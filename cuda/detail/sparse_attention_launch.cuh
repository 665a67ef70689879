// @brief Internal launchers of the two attention kernels (for .cu files; takes a cudaStream_t).
#pragma once

#include <cuda_runtime.h>

#include "core/numerics/sparse_attention_args.h"

namespace hisparse::cuda {

void launch_sparse_attention_exact(const SparseAttentionArgs& args, cudaStream_t stream);
/// The fast kernel (wgmma); throws on a build without sm_90a.
void launch_sparse_attention_fast(const SparseAttentionArgs& args, cudaStream_t stream);
void launch_sparse_attention_wgmma(const SparseAttentionArgs& args, cudaStream_t stream);
bool sparse_attention_wgmma_built();

}  // namespace hisparse::cuda
