// @brief Scattered row copies between pinned host memory and device memory in one launch (zero-copy: the kernel
// reads or writes the mapped host pool over PCIe), or the copy engine as the fallback.
//
// Three zero-copy kernels, chosen per direction by environment knobs read once per process (a GPU sweep compares
// them; validate checks each bit for bit):
//   HISPARSE_GATHER_KERNEL / HISPARSE_BACKUP_KERNEL = warp | flat | tma  (default: warp)
//     warp  a warp per row, 16-byte accesses, two rows per warp round once there are more rows than warps
//     flat  the (row, 16-byte vector) pairs of the whole call flattened over every thread: every SM gets work at
//           once even for a few rows, HISPARSE_COPY_UNROLL (1|2|4|8, default 4) independent loads per thread
//           before its stores
//     tma   whole rows by the bulk-copy engine of each SM (cp.async.bulk, global -> shared -> global), staged
//           HISPARSE_COPY_TMA_ROWS rows at a time (default 4), two stages in flight per block: one request per
//           row instead of 16-byte thread accesses, in case the PCIe requests come out larger
//   HISPARSE_COPY_BLOCKS_PER_SM  grid cap of flat and tma (default 8)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cuda/copy_rows.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/env_knob.h"
#include "cuda/detail/row_copy.cuh"

namespace hisparse::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kFlatThreads = 256;
constexpr int kTmaThreads = 32;          // lane j issues row j of a group; the bulk-copy engine moves it
constexpr int64_t kTmaStageBytes = 16384;  // per stage (two stages per block): within the default 48 KiB

enum class RowKernel { kWarp, kFlat, kTma };

RowKernel kernel_knob(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::strcmp(v, "warp") == 0) return RowKernel::kWarp;
  if (std::strcmp(v, "flat") == 0) return RowKernel::kFlat;
  if (std::strcmp(v, "tma") == 0) return RowKernel::kTma;
  throw_error("environment variable {} = '{}', expected warp, flat or tma", name, v);
}

struct Knobs {
  RowKernel gather, backup;
  int unroll, tma_rows, blocks_per_sm;
};

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs r;
    r.gather = kernel_knob("HISPARSE_GATHER_KERNEL");
    r.backup = kernel_knob("HISPARSE_BACKUP_KERNEL");
    r.unroll = int(detail::env_knob("HISPARSE_COPY_UNROLL", 4, 1, 8));
    if (r.unroll & (r.unroll - 1)) throw_error("HISPARSE_COPY_UNROLL = {}, expected 1, 2, 4 or 8", r.unroll);
    r.tma_rows = int(detail::env_knob("HISPARSE_COPY_TMA_ROWS", 4, 1, 32));
    r.blocks_per_sm = int(detail::env_knob("HISPARSE_COPY_BLOCKS_PER_SM", 8, 1, 64));
    return r;
  }();
  return k;
}

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

/// Vector v of the call is vector v % vecs of row v / vecs; consecutive threads take consecutive vectors, so a
/// warp reads 512 contiguous bytes (at most two rows, each 16-byte aligned). `total` = count * vecs < 2^31.
template <bool kToDevice, int kUnroll>
__global__ void __launch_bounds__(kFlatThreads) copy_rows_flat_kernel(int total, int vecs, RowAddr<kToDevice> ra) {
  const int stride = int(gridDim.x) * kFlatThreads;
  for (int base = int(blockIdx.x) * kFlatThreads + int(threadIdx.x); base < total; base += kUnroll * stride) {
    uint4 r[kUnroll];
    uint4* d[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + u * stride;
      if (v < total) {
        const int row = int(unsigned(v) / unsigned(vecs)), col = v - row * vecs;
        r[u] = reinterpret_cast<const uint4*>(ra.src(row))[col];
        d[u] = reinterpret_cast<uint4*>(ra.dst(row)) + col;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (base + u * stride < total) *d[u] = r[u];
  }
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

/// Block b (one warp) takes groups b, b + grid, ... of `per` <= 32 rows; lane j moves row j of a group, so the
/// index loads of a group are parallel. Group k lands in stage k & 1 (bar[stage] counts its bytes); the loads of
/// group k are issued before group k - 1 is stored, so two groups are in flight per block; a stage is refilled
/// only after the bulk stores of the group before have finished reading it (bulk groups are per thread: every
/// lane waits for its own, then the warp syncs).
template <bool kToDevice>
__global__ void __launch_bounds__(kTmaThreads) copy_rows_tma_kernel(int64_t count, int per, RowAddr<kToDevice> ra) {
  extern __shared__ __align__(128) uint8_t stage_buf[];
  __shared__ __align__(8) uint64_t bar[2];
  const int lane = threadIdx.x;
  const uint32_t rb = uint32_t(ra.row_bytes);
  const uint32_t bar0 = smem_addr(&bar[0]);
  if (lane == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0 + 8) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncwarp();
  const int64_t groups = (count + per - 1) / per;
  auto rows_in = [&](int64_t g) { return int(min(int64_t(per), count - g * per)); };
  uint8_t* prev_dst = nullptr;  // this lane's destination in the group loaded last
  auto load = [&](int64_t g, int st) {
    const int n = rows_in(g);
    const uint32_t b = bar0 + 8u * uint32_t(st);
    if (lane == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(uint32_t(n) * rb) : "memory");
    __syncwarp();
    if (lane < n) {
      const uint32_t buf = smem_addr(stage_buf) + (uint32_t(st) * uint32_t(per) + uint32_t(lane)) * rb;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(buf),
                   "l"(ra.src(g * per + lane)), "r"(rb), "r"(b)
                   : "memory");
      prev_dst = ra.dst(g * per + lane);
    }
  };
  auto store = [&](int64_t g, int st, uint32_t parity, uint8_t* dst) {
    mbar_wait(bar0 + 8u * uint32_t(st), parity);
    if (lane < rows_in(g)) {
      const uint32_t buf = smem_addr(stage_buf) + (uint32_t(st) * uint32_t(per) + uint32_t(lane)) * rb;
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(buf), "r"(rb)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
  };
  int k = 0;  // groups this block has loaded
  int64_t prev = -1;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x, ++k) {
    // Stage k & 1 was last read by the stores of group k - 2, the newest store groups committed so far.
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    __syncwarp();
    uint8_t* dst_prev = prev_dst;
    load(g, k & 1);
    if (prev >= 0) store(prev, (k - 1) & 1, uint32_t(((k - 1) >> 1) & 1), dst_prev);
    prev = g;
  }
  if (prev >= 0) store(prev, (k - 1) & 1, uint32_t(((k - 1) >> 1) & 1), prev_dst);
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // writes complete (and smem free) before exit
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

template <bool kToDevice, int kUnroll>
void launch_flat(int total, int vecs, const RowAddr<kToDevice>& ra, cudaStream_t s) {
  const int64_t want = (int64_t(total) + int64_t(kFlatThreads) * kUnroll - 1) / (int64_t(kFlatThreads) * kUnroll);
  const int blocks = int(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count()) * knobs().blocks_per_sm)));
  copy_rows_flat_kernel<kToDevice, kUnroll><<<blocks, kFlatThreads, 0, s>>>(total, vecs, ra);
}

template <bool kToDevice>
void launch_kernel(const RowCopyDeviceArgs& a, RowKernel kind, cudaStream_t s) {
  const RowAddr<kToDevice> ra{a.row_bytes, a.host_row, a.device_row, a.host_pool, a.device_pool};
  const int64_t vecs = a.row_bytes / 16;
  const int per = int(std::min<int64_t>(knobs().tma_rows, std::max<int64_t>(1, kTmaStageBytes / a.row_bytes)));
  // The variants' limits: flat indexes vectors in 32 bits; tma stages rows in 2 x 16 KiB of shared memory.
  if (kind == RowKernel::kFlat && a.count * vecs >= (int64_t(1) << 30)) kind = RowKernel::kWarp;
  if (kind == RowKernel::kTma && a.row_bytes > kTmaStageBytes) kind = RowKernel::kFlat;
  if (kind == RowKernel::kFlat) {
    const int total = int(a.count * vecs);
    switch (knobs().unroll) {
      case 1: launch_flat<kToDevice, 1>(total, int(vecs), ra, s); break;
      case 2: launch_flat<kToDevice, 2>(total, int(vecs), ra, s); break;
      case 4: launch_flat<kToDevice, 4>(total, int(vecs), ra, s); break;
      default: launch_flat<kToDevice, 8>(total, int(vecs), ra, s); break;
    }
  } else if (kind == RowKernel::kTma) {
    const int64_t groups = (a.count + per - 1) / per;
    const int blocks = int(std::max<int64_t>(1, std::min<int64_t>(groups, int64_t(sm_count()) * knobs().blocks_per_sm)));
    copy_rows_tma_kernel<kToDevice><<<blocks, kTmaThreads, size_t(2 * per) * size_t(a.row_bytes), s>>>(a.count, per, ra);
  } else {
    copy_rows_kernel<kToDevice><<<copy_blocks(a.count), kWarpsPerBlock * 32, 0, s>>>(a.count, ra);
  }
  HS_CUDA_CHECK_LAUNCH();
}

void launch(const RowCopyDeviceArgs& a, CopyMode mode, bool to_device, StreamHandle handle) {
  if (a.count == 0) return;
  if (a.row_bytes < 16 || a.row_bytes % 16 != 0)
    throw_error("row copy: row_bytes = {}, expected a positive multiple of 16", a.row_bytes);
  auto stream = static_cast<cudaStream_t>(handle);
  if (mode == CopyMode::kCopyEngine) return copy_engine(a, to_device, stream);
  if (to_device)
    launch_kernel<true>(a, knobs().gather, stream);
  else
    launch_kernel<false>(a, knobs().backup, stream);
}

}  // namespace

void gather_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, true, stream); }
void backup_device(const RowCopyDeviceArgs& a, CopyMode mode, StreamHandle stream) { launch(a, mode, false, stream); }

const char* row_copy_kernel_name(bool to_device) {
  static const char* kNames[] = {"warp", "flat", "tma"};
  return kNames[int(to_device ? knobs().gather : knobs().backup)];
}

}  // namespace hisparse::cuda
