// @brief Scattered row copies between pinned host memory and device memory in one launch (zero-copy: a warp per
// row reads or writes the mapped host pool over PCIe with 16-byte accesses), or the copy engine as the fallback.
//
// Two other zero-copy kernels were measured against this one on the H200 and removed: the (row, vector) pairs of
// the call flattened over every thread (unroll 1-8), and rows moved by the SM's bulk-copy engine (1-8 rows per
// stage). Neither was faster than a warp per row by more than the run-to-run spread at any size, per call or in a
// CUDA graph (bench/results/swap_in_copy_sweeps_h200_2026-11-22/topk_gather_backup_sweep.log).
#include <cuda_runtime.h>

#include <algorithm>

#include "core/error.h"
#include "cuda/copy_rows.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/row_copy.cuh"

namespace hisparse::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

int sm_count() {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    HS_CUDA_CHECK(cudaGetDevice(&dev));
    HS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
  return sms;
}

/// The copy of index i: kToDevice: device_pool[device_row[i]] <- host_pool[host_row[i]]; otherwise the reverse.
template <bool kToDevice>
struct RowAddr {
  int64_t row_bytes;
  const int64_t* __restrict__ host_row;
  const int64_t* __restrict__ device_row;
  uint8_t* host_pool;
  uint8_t* device_pool;
  __device__ const uint8_t* src(int64_t i) const {
    return kToDevice ? host_pool + host_row[i] * row_bytes : device_pool + device_row[i] * row_bytes;
  }
  __device__ uint8_t* dst(int64_t i) const {
    return kToDevice ? device_pool + device_row[i] * row_bytes : host_pool + host_row[i] * row_bytes;
  }
};

/// Each warp takes two rows per round so that a lane has 4-6 loads in flight over PCIe.
template <bool kToDevice>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) copy_rows_kernel(int64_t count, RowAddr<kToDevice> ra) {
  const int lane = threadIdx.x & 31;
  const int vecs = static_cast<int>(ra.row_bytes / 16);
  const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
  int64_t r = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  auto src = [&](int64_t i) { return reinterpret_cast<const uint4*>(ra.src(i)); };
  auto dst = [&](int64_t i) { return reinterpret_cast<uint4*>(ra.dst(i)); };
  for (; r + stride < count; r += 2 * stride)
    detail::copy_two_rows_warp(src(r), dst(r), src(r + stride), dst(r + stride), vecs, lane);
  if (r < count) detail::copy_row_warp(src(r), dst(r), vecs, lane);
}

int copy_blocks(int64_t count) {
  // A warp per row up to 16 blocks (128 warps) per SM; beyond that warps take two rows per round.
  const int64_t want = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count()) * 16)));
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

template <bool kToDevice>
void launch_kernel(const RowCopyDeviceArgs& a, cudaStream_t s) {
  const RowAddr<kToDevice> ra{a.row_bytes, a.host_row, a.device_row, a.host_pool, a.device_pool};
  copy_rows_kernel<kToDevice><<<copy_blocks(a.count), kWarpsPerBlock * 32, 0, s>>>(a.count, ra);
  HS_CUDA_CHECK_LAUNCH();
}

void launch(const RowCopyDeviceArgs& a, CopyMode mode, bool to_device, StreamHandle handle) {
  if (a.count == 0) return;
  if (a.row_bytes < 16 || a.row_bytes % 16 != 0)
    throw_error("row copy: row_bytes = {}, expected a positive multiple of 16", a.row_bytes);
  auto stream = static_cast<cudaStream_t>(handle);
  if (mode == CopyMode::kCopyEngine) return copy_engine(a, to_device, stream);
  if (to_device)
    launch_kernel<true>(a, stream);
  else
    launch_kernel<false>(a, stream);
}

}  // namespace

void gather_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, true, stream); }
void backup_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, false, stream); }

}  // namespace hisparse::cuda
