// @brief Dispatch of the sparse attention kernels and the host-pointer entry point (upload, run, download).
#include <cuda_runtime.h>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/detail/sparse_attention_launch.cuh"
#include "cuda/sparse_attention.h"

namespace hisparse::cuda {

const char* fast_attention_variant() {
  return sparse_attention_wgmma_built() ? "wgmma" : "none (needs a build for CUDA architecture 90a)";
}

void launch_sparse_attention_fast(const SparseAttentionArgs& args, cudaStream_t stream) {
  if (args.tokens == 0) return;
  launch_sparse_attention_wgmma(args, stream);
}

const char* attention_kernel_name(AttentionKernel kernel) {
  return kernel == AttentionKernel::kExact ? "exact" : "fast";
}

void sparse_attention_device(const SparseAttentionArgs& args, AttentionKernel kernel, StreamHandle stream) {
  check_sparse_attention_args(args);
  const auto s = static_cast<cudaStream_t>(stream);
  if (kernel == AttentionKernel::kExact)
    launch_sparse_attention_exact(args, s);
  else
    launch_sparse_attention_fast(args, s);
}

void sparse_attention_host(const SparseAttentionArgs& args, AttentionKernel kernel) {
  check_sparse_attention_args(args);
  check_sparse_attention_indices(args);
  if (args.tokens == 0) return;
  const size_t nq = size_t(args.tokens) * args.heads * kMlaQkDim, nkv = size_t(args.slots) * kMlaQkDim;
  const size_t nidx = size_t(args.tokens) * args.top_k, nout = size_t(args.tokens) * args.heads * kMlaVDim;
  const size_t nlse = size_t(args.tokens) * args.heads;
  detail::OpDeviceArray<num::Bf16Bits> q, kv, out;
  detail::OpDeviceArray<int32_t> idx;
  detail::OpDeviceArray<float> lse;
  SparseAttentionArgs d = args;
  d.q = q.upload(args.q, nq);
  d.kv = kv.upload(args.kv, nkv);
  d.indices = idx.upload(args.indices, nidx);
  out.resize(nout);
  out.poison(0xff);
  lse.resize(nlse);
  lse.poison(0xff);
  d.out = out.get();
  d.lse = lse.get();
  sparse_attention_device(d, kernel, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  out.download(args.out, nout);
  lse.download(args.lse, nlse);
}

}  // namespace hisparse::cuda
