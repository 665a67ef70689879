// @brief Scattered row copies between pinned host memory and device memory: a warp per row with 16-byte
// accesses (zero-copy, one launch for any number of rows), or the copy engine as the fallback.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/error.h"
#include "cuda/copy_rows.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/row_copy.cuh"

namespace hisparse::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

/// to_device: dst = device_pool[device_row], src = host_pool[host_row]; otherwise the reverse (backup).
/// Each warp takes two rows per round so that a lane has 4-6 loads in flight over PCIe.
template <bool kToDevice>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    copy_rows_kernel(int64_t count, int64_t row_bytes, const int64_t* __restrict__ host_row,
                     const int64_t* __restrict__ device_row, uint8_t* host_pool, uint8_t* device_pool) {
  const int lane = threadIdx.x & 31;
  const int vecs = static_cast<int>(row_bytes / 16);
  const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
  int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  auto src_of = [&](int64_t i) {
    return reinterpret_cast<const uint4*>(kToDevice ? host_pool + host_row[i] * row_bytes
                                                    : device_pool + device_row[i] * row_bytes);
  };
  auto dst_of = [&](int64_t i) {
    return reinterpret_cast<uint4*>(kToDevice ? device_pool + device_row[i] * row_bytes
                                              : host_pool + host_row[i] * row_bytes);
  };
  for (; r + stride < count; r += 2 * stride)
    detail::copy_two_rows_warp(src_of(r), dst_of(r), src_of(r + stride), dst_of(r + stride), vecs, lane);
  if (r < count) detail::copy_row_warp(src_of(r), dst_of(r), vecs, lane);
}

int copy_blocks(int64_t count) {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    HS_CUDA_CHECK(cudaGetDevice(&dev));
    HS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
  // A warp per row up to 16 blocks (128 warps) per SM; beyond that warps take two rows per round.
  const int64_t want = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sms) * 16)));
}

void copy_engine(const RowCopyDeviceArgs& a, bool to_device, cudaStream_t stream) {
  if (!a.host_row_on_host || !a.device_row_on_host)
    throw_error("copy-engine row copy needs the row index lists on the host (host_row_on_host, device_row_on_host)");
  const int64_t rb = a.row_bytes;
  for (int64_t i = 0; i < a.count;) {
    int64_t run = 1;  // consecutive rows on both sides travel as one copy
    while (i + run < a.count && a.host_row_on_host[i + run] == a.host_row_on_host[i] + run &&
           a.device_row_on_host[i + run] == a.device_row_on_host[i] + run)
      ++run;
    uint8_t* h = a.host_pool + a.host_row_on_host[i] * rb;
    uint8_t* d = a.device_pool + a.device_row_on_host[i] * rb;
    if (to_device)
      HS_CUDA_CHECK(cudaMemcpyAsync(d, h, size_t(run * rb), cudaMemcpyHostToDevice, stream));
    else
      HS_CUDA_CHECK(cudaMemcpyAsync(h, d, size_t(run * rb), cudaMemcpyDeviceToHost, stream));
    i += run;
  }
}

void launch(const RowCopyDeviceArgs& a, CopyMode mode, bool to_device, StreamHandle handle) {
  if (a.count == 0) return;
  if (a.row_bytes < 16 || a.row_bytes % 16 != 0)
    throw_error("row copy: row_bytes = {}, expected a positive multiple of 16", a.row_bytes);
  auto stream = static_cast<cudaStream_t>(handle);
  if (mode == CopyMode::kCopyEngine) return copy_engine(a, to_device, stream);
  const int blocks = copy_blocks(a.count);
  if (to_device)
    copy_rows_kernel<true><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(a.count, a.row_bytes, a.host_row, a.device_row,
                                                                     a.host_pool, a.device_pool);
  else
    copy_rows_kernel<false><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(a.count, a.row_bytes, a.host_row,
                                                                      a.device_row, a.host_pool, a.device_pool);
  HS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gather_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, true, stream); }
void backup_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, false, stream); }

}  // namespace hisparse::cuda
