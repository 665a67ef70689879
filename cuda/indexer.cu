// @brief Lightning-indexer scoring on CUDA cores in the fixed orders of core/numerics/indexer_args.h (bf16, or fp8
// E4M3 with a per-row key scale): one thread per scored position, q of the token staged once as fp32 in shared
// memory (read as broadcasts).
#include <cuda_runtime.h>

#include "core/numerics/online_softmax.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/indexer.h"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = 128;

/// 16 E4M3 codes packed in a 16-byte vector (byte i = code i) → 16 floats, exact (num::fp8_e4m3_to_float).
__device__ __forceinline__ void unpack_fp8x16(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int b = 0; b < 4; ++b) f[4 * i + b] = num::fp8_e4m3_to_float(num::Fp8Bits((w[i] >> (8 * b)) & 0xffu));
  }
}

/// One 16-byte vector of the dtype's codes → its values (bf16: 8, fp8: 16), exact.
template <bool kFp8>
__device__ __forceinline__ void unpack_vec(const uint4& v, float* f) {
  if constexpr (kFp8)
    unpack_fp8x16(v, f);
  else
    detail::unpack_bf16x8(v, f);
}

/// Token t's q and key row r, as 16-byte vectors of the dtype's array.
template <bool kFp8>
__device__ __forceinline__ const uint4* q_vecs(const IndexerArgs& a, int64_t t) {
  if constexpr (kFp8)
    return reinterpret_cast<const uint4*>(a.q_fp8 + t * kIndexerHeads * kIndexerDim);
  else
    return reinterpret_cast<const uint4*>(a.q + t * kIndexerHeads * kIndexerDim);
}
template <bool kFp8>
__device__ __forceinline__ const uint4* key_vecs(const IndexerArgs& a, int64_t r) {
  if constexpr (kFp8)
    return reinterpret_cast<const uint4*>(a.keys_fp8 + r * kIndexerDim);
  else
    return reinterpret_cast<const uint4*>(a.keys + r * kIndexerDim);
}

/// Both dtypes: q and the weights of the token staged in shared memory, one position per thread. The score is the
/// bf16 chain below, or num::indexer_fp8_score, the very function the CPU reference calls.
template <bool kFp8>
__global__ void __launch_bounds__(kThreads) indexer_kernel(IndexerArgs a) {
  constexpr int kPerVec = kFp8 ? 16 : 8;  // values per 16-byte vector
  __shared__ __align__(16) float qs[kIndexerHeads][kIndexerDim];
  __shared__ float ws[kIndexerHeads];
  const int t = blockIdx.y;
  const uint4* q = q_vecs<kFp8>(a, t);
  for (int i = threadIdx.x; i < kIndexerHeads * kIndexerDim / kPerVec; i += kThreads)
    unpack_vec<kFp8>(__ldg(q + i), &qs[0][0] + kPerVec * i);
  if (threadIdx.x < kIndexerHeads) ws[threadIdx.x] = a.weights[int64_t(t) * kIndexerHeads + threadIdx.x];
  __syncthreads();
  const int64_t s = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (s >= a.max_len) return;
  float* out = a.scores + int64_t(t) * a.max_len + s;
  if (s >= a.seq_len[t]) {
    *out = -num::hs_inf();
    return;
  }
  const int64_t r = a.key_start[t] + s;
  const uint4* krow = key_vecs<kFp8>(a, r);
  float k[kIndexerDim];
#pragma unroll
  for (int i = 0; i < kIndexerDim / kPerVec; ++i) unpack_vec<kFp8>(__ldg(krow + i), k + kPerVec * i);
  if constexpr (kFp8) {
    *out = num::indexer_fp8_score(&qs[0][0], ws, k, __ldg(a.key_scale + r));
  } else {
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
}

}  // namespace

void indexer_scores_device(const IndexerArgs& args, StreamHandle stream) {
  check_indexer_args(args);
  if (args.tokens == 0 || args.max_len == 0) return;
  const dim3 grid(unsigned((args.max_len + kThreads - 1) / kThreads), unsigned(args.tokens));
  if (args.dtype == IndexerDtype::kFp8E4m3)
    indexer_kernel<true><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  else
    indexer_kernel<false><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

void indexer_scores_host(const IndexerArgs& args) {
  check_indexer_args(args);
  if (args.tokens == 0 || args.max_len == 0) return;
  check_indexer_ranges(args);
  const size_t T = size_t(args.tokens);
  detail::OpDeviceArray<num::Bf16Bits> q, keys;
  detail::OpDeviceArray<num::Fp8Bits> q8, keys8;
  detail::OpDeviceArray<float> w, scale, scores;
  detail::OpDeviceArray<int64_t> start;
  detail::OpDeviceArray<int32_t> len;
  IndexerArgs d = args;
  if (args.dtype == IndexerDtype::kFp8E4m3) {
    d.q_fp8 = q8.upload(args.q_fp8, T * kIndexerHeads * kIndexerDim);
    d.keys_fp8 = keys8.upload(args.keys_fp8, size_t(args.key_rows) * kIndexerDim);
    d.key_scale = scale.upload(args.key_scale, size_t(args.key_rows));
  } else {
    d.q = q.upload(args.q, T * kIndexerHeads * kIndexerDim);
    d.keys = keys.upload(args.keys, size_t(args.key_rows) * kIndexerDim);
  }
  d.weights = w.upload(args.weights, T * kIndexerHeads);
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
