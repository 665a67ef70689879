// @brief Small RAII device array and bf16 unpacking helpers shared by the attention, indexer and top-k kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "core/numerics/bf16.h"
#include "cuda/detail/cuda_check.cuh"

namespace hisparse::cuda::detail {

/// Owns `count` elements of device memory; copies from/to host vectors.
template <typename T>
class OpDeviceArray {
 public:
  OpDeviceArray() = default;
  explicit OpDeviceArray(size_t count) { resize(count); }
  ~OpDeviceArray() { cudaFree(ptr_); }
  OpDeviceArray(const OpDeviceArray&) = delete;
  OpDeviceArray& operator=(const OpDeviceArray&) = delete;
  void resize(size_t count) {
    cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = count;
    if (count) HS_CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  /// Uploads `count` host elements (nullptr host source leaves the array unset); returns the device pointer.
  T* upload(const T* host, size_t count) {
    resize(count);
    if (host && count) HS_CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
    return ptr_;
  }
  void download(T* host, size_t count) const {
    if (count) HS_CUDA_CHECK(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  /// Fills every byte with `byte` (0xff poisons floats as NaN and ints as -1).
  void poison(int byte) {
    if (count_) HS_CUDA_CHECK(cudaMemset(ptr_, byte, count_ * sizeof(T)));
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

/// 8 bf16 values packed in a 16-byte vector → 8 floats (exact).
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

}  // namespace hisparse::cuda::detail
