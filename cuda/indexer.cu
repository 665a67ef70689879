// @brief Lightning-indexer scoring on CUDA cores in the fixed order of core/numerics/indexer_args.h: one thread
// per scored position, q of the token staged once as fp32 in shared memory (read as broadcasts).
#include <cuda_runtime.h>

#include "core/numerics/online_softmax.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/indexer.h"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) indexer_kernel(IndexerArgs a) {
  __shared__ __align__(16) float qs[kIndexerHeads][kIndexerDim];
  __shared__ float ws[kIndexerHeads];
  const int t = blockIdx.y;
  const num::Bf16Bits* q = a.q + int64_t(t) * kIndexerHeads * kIndexerDim;
  for (int i = threadIdx.x; i < kIndexerHeads * kIndexerDim / 8; i += kThreads) {
    float f[8];
    detail::unpack_bf16x8(__ldg(reinterpret_cast<const uint4*>(q) + i), f);
#pragma unroll
    for (int e = 0; e < 8; ++e) (&qs[0][0])[i * 8 + e] = f[e];
  }
  if (threadIdx.x < kIndexerHeads) ws[threadIdx.x] = a.weights[int64_t(t) * kIndexerHeads + threadIdx.x];
  __syncthreads();
  const int64_t s = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (s >= a.max_len) return;
  float* out = a.scores + int64_t(t) * a.max_len + s;
  if (s >= a.seq_len[t]) {
    *out = -num::hs_inf();
    return;
  }
  const uint4* krow = reinterpret_cast<const uint4*>(a.keys + (a.key_start[t] + s) * kIndexerDim);
  float k[kIndexerDim];
#pragma unroll
  for (int i = 0; i < kIndexerDim / 8; ++i) detail::unpack_bf16x8(__ldg(krow + i), k + 8 * i);
  float acc = 0.0f;
  for (int h = 0; h < kIndexerHeads; ++h) {
    float dot = 0.0f;
#pragma unroll
    for (int d = 0; d < kIndexerDim; d += 4) {
      const float4 q4 = *reinterpret_cast<const float4*>(&qs[h][d]);
      dot = num::dot_step(dot, q4.x, k[d]);
      dot = num::dot_step(dot, q4.y, k[d + 1]);
      dot = num::dot_step(dot, q4.z, k[d + 2]);
      dot = num::dot_step(dot, q4.w, k[d + 3]);
    }
    acc = num::hs_fma(ws[h], num::indexer_relu(dot), acc);
  }
  *out = acc;
}

}  // namespace

void indexer_scores_device(const IndexerArgs& args, StreamHandle stream) {
  check_indexer_args(args);
  if (args.tokens == 0 || args.max_len == 0) return;
  const dim3 grid(unsigned((args.max_len + kThreads - 1) / kThreads), unsigned(args.tokens));
  indexer_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

void indexer_scores_host(const IndexerArgs& args) {
  check_indexer_args(args);
  if (args.tokens == 0 || args.max_len == 0) return;
  check_indexer_ranges(args);
  const size_t T = size_t(args.tokens);
  detail::OpDeviceArray<num::Bf16Bits> q, keys;
  detail::OpDeviceArray<float> w, scores;
  detail::OpDeviceArray<int64_t> start;
  detail::OpDeviceArray<int32_t> len;
  IndexerArgs d = args;
  d.q = q.upload(args.q, T * kIndexerHeads * kIndexerDim);
  d.weights = w.upload(args.weights, T * kIndexerHeads);
  d.keys = keys.upload(args.keys, size_t(args.key_rows) * kIndexerDim);
  d.key_start = start.upload(args.key_start, T);
  d.seq_len = len.upload(args.seq_len, T);
  scores.resize(T * size_t(args.max_len));
  scores.poison(0xff);
  d.scores = scores.get();
  indexer_scores_device(d, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  scores.download(args.scores, T * size_t(args.max_len));
}

}  // namespace hisparse::cuda
