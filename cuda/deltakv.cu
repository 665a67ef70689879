// @brief DeltaKV reconstruction on the GPU: a block per compressed row, its reference indices in shared memory,
// each thread a strided set of elements, each element by num::deltakv_element (core/numerics/deltakv_args.h), the
// same fixed-order fp32 sum, IEEE division and explicit fma as the CPU reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda/detail/cuda_check.cuh"
#include "cuda/io_ops.h"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) deltakv_kernel(DeltaKvArgs a) {
  __shared__ int32_t idx[kDeltaKvMaxRefs];
  const int64_t r = blockIdx.x;
  if (int(threadIdx.x) < a.refs) idx[threadIdx.x] = a.ref_index[r * a.refs + threadIdx.x];
  __syncthreads();
  const float scale = a.residual_scale[r];
  const uint8_t* res = a.residual + r * a.dim;
  uint16_t* out = a.out + r * a.dim;
  for (int64_t d = threadIdx.x; d < a.dim; d += kThreads)
    out[d] = num::deltakv_element(a.ref_pool, a.dim, idx, a.refs, res[d], scale, d);
}

template <typename T>
T* to_device(const T* src, size_t n) {
  T* d = nullptr;
  HS_CUDA_CHECK(cudaMalloc(&d, std::max<size_t>(n, 1) * sizeof(T)));
  if (n) HS_CUDA_CHECK(cudaMemcpy(d, src, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

void deltakv_device(const DeltaKvArgs& a, StreamHandle stream) {
  if (a.rows == 0) return;
  static_assert(kThreads >= kDeltaKvMaxRefs, "one thread stages each reference index");
  deltakv_kernel<<<static_cast<unsigned>(a.rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(a);
  HS_CUDA_CHECK_LAUNCH();
}

void deltakv_host(const DeltaKvArgs& a) {
  check_deltakv_args(a);
  if (a.rows == 0) return;
  const size_t out_n = size_t(a.rows * a.dim);
  DeltaKvArgs d = a;
  d.ref_pool = to_device(a.ref_pool, size_t(a.pool_rows * a.dim));
  d.ref_index = to_device(a.ref_index, size_t(a.rows * a.refs));
  d.residual = to_device(a.residual, out_n);
  d.residual_scale = to_device(a.residual_scale, size_t(a.rows));
  uint16_t* out = nullptr;
  HS_CUDA_CHECK(cudaMalloc(&out, out_n * sizeof(uint16_t)));
  HS_CUDA_CHECK(cudaMemset(out, 0x5A, out_n * sizeof(uint16_t)));  // poison: a skipped element cannot match
  d.out = out;
  deltakv_device(d, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  HS_CUDA_CHECK(cudaMemcpy(a.out, out, out_n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  HS_CUDA_CHECK(cudaFree(out));
  HS_CUDA_CHECK(cudaFree(const_cast<float*>(d.residual_scale)));
  HS_CUDA_CHECK(cudaFree(const_cast<uint8_t*>(d.residual)));
  HS_CUDA_CHECK(cudaFree(const_cast<int32_t*>(d.ref_index)));
  HS_CUDA_CHECK(cudaFree(const_cast<uint16_t*>(d.ref_pool)));
}

}  // namespace hisparse::cuda
