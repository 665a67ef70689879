// @brief Layout-aware copies between a host pool in SGLang's layer_first / page_first / page_head layout and the
// layer-first device pool, zero-copy: a warp per (token, layer) reads or writes the mapped host pool over PCIe with
// 16-byte accesses, every head of the row in one pass (the chunk offsets of core/host_layout.h). SGLang's
// counterparts are the kernels of sgl-kernel/csrc/kvcacheio/transfer.cu (one warp per item as well).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "cuda/detail/cuda_check.cuh"
#include "cuda/io_ops.h"
#include "cuda/runtime.h"

namespace hisparse::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

template <bool kToDevice>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) layout_copy_kernel(LayoutCopyView v) {
  const int lane = threadIdx.x & 31;
  const int64_t items = v.count * v.layer_count;
  const int64_t vph = v.shape.head_bytes / 16;  // 16-byte vectors per head chunk
  const int64_t vecs = vph * v.shape.heads;
  for (int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); item < items;
       item += int64_t(gridDim.x) * kWarpsPerBlock) {
    const int64_t i = item / v.layer_count;
    const int64_t layer = v.layer_begin + item % v.layer_count;
    const int64_t hl = v.host_loc[i], dl = v.device_loc[i];
    for (int64_t k = lane; k < vecs; k += 32) {
      const int64_t head = k / vph, vec = k % vph;
      auto* host = reinterpret_cast<uint4*>(v.host_pool + host_chunk_offset(v.layout, v.shape, layer, hl, head)) + vec;
      auto* dev = reinterpret_cast<uint4*>(v.device_pool + device_chunk_offset(v.shape, v.device_rows, layer, dl, head)) + vec;
      if (kToDevice)
        *dev = *host;
      else
        *host = *dev;
    }
  }
}

int blocks_for(int64_t items) {
  const int64_t want = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(std::max(1, sm_count())) * 16)));
}

void layout_copy_host(const LayoutCopyView& v, bool to_device) {
  check_layout_copy(v, to_device ? "cuda layout gather" : "cuda layout backup", !to_device);
  if (v.count == 0 || v.layer_count == 0) return;
  const size_t host_bytes = size_t(v.shape.total_bytes()), dev_bytes = size_t(v.device_bytes());
  void *pinned = nullptr, *dev = nullptr, *hl = nullptr, *dl = nullptr;
  HS_CUDA_CHECK(cudaHostAlloc(&pinned, host_bytes, cudaHostAllocMapped));
  std::memcpy(pinned, v.host_pool, host_bytes);
  HS_CUDA_CHECK(cudaMalloc(&dev, dev_bytes));
  HS_CUDA_CHECK(cudaMalloc(&hl, size_t(v.count) * sizeof(int64_t)));
  HS_CUDA_CHECK(cudaMalloc(&dl, size_t(v.count) * sizeof(int64_t)));
  HS_CUDA_CHECK(cudaMemcpy(dev, v.device_pool, dev_bytes, cudaMemcpyHostToDevice));
  HS_CUDA_CHECK(cudaMemcpy(hl, v.host_loc, size_t(v.count) * sizeof(int64_t), cudaMemcpyHostToDevice));
  HS_CUDA_CHECK(cudaMemcpy(dl, v.device_loc, size_t(v.count) * sizeof(int64_t), cudaMemcpyHostToDevice));
  LayoutCopyView d = v;
  d.host_pool = static_cast<uint8_t*>(pinned);
  d.device_pool = static_cast<uint8_t*>(dev);
  d.host_loc = static_cast<const int64_t*>(hl);
  d.device_loc = static_cast<const int64_t*>(dl);
  layout_copy_device(d, to_device, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  if (to_device)
    HS_CUDA_CHECK(cudaMemcpy(v.device_pool, dev, dev_bytes, cudaMemcpyDeviceToHost));
  else
    std::memcpy(v.host_pool, pinned, host_bytes);
  HS_CUDA_CHECK(cudaFree(dl));
  HS_CUDA_CHECK(cudaFree(hl));
  HS_CUDA_CHECK(cudaFree(dev));
  HS_CUDA_CHECK(cudaFreeHost(pinned));
}

}  // namespace

void layout_copy_device(const LayoutCopyView& v, bool to_device, StreamHandle handle) {
  const int64_t items = v.count * v.layer_count;
  if (items == 0) return;
  auto stream = static_cast<cudaStream_t>(handle);
  if (to_device)
    layout_copy_kernel<true><<<blocks_for(items), kWarpsPerBlock * 32, 0, stream>>>(v);
  else
    layout_copy_kernel<false><<<blocks_for(items), kWarpsPerBlock * 32, 0, stream>>>(v);
  HS_CUDA_CHECK_LAUNCH();
}

void layout_gather_host(const LayoutCopyView& v) { layout_copy_host(v, true); }
void layout_backup_host(const LayoutCopyView& v) { layout_copy_host(v, false); }

}  // namespace hisparse::cuda
