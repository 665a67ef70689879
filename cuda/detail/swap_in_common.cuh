// @brief Helpers shared by the swap-in kernels (cuda/swap_in.cu, cuda/swap_in_cluster.cu): the token hash,
// block-wide scan and coalesced shared-memory loads of a 1024-thread block, PDL and cluster barriers, the launch
// configuration.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/swap_in.h"

namespace hisparse::cuda::detail {

constexpr int kSwapInThreads = 1024;
constexpr int kSwapInWarps = kSwapInThreads / 32;
constexpr int kSwapInMaxTopK = 32767;  // entry indices live in int16 hash values
constexpr unsigned kSwapInFullMask = 0xffffffffu;

inline size_t swap_in_align16(size_t x) { return (x + 15) & ~size_t(15); }

/// log2 of the hash table size for K tokens: load factor <= 1/2 keeps linear probes short; at least 64 entries.
inline int swap_in_table_bits(int32_t K) {
  int bits = 6;
  while ((1 << bits) < 2 * K) ++bits;
  return bits;
}

/// The result words of a row that succeeded (one thread per row writes them): counters, load count, error = ok.
__device__ __forceinline__ void swap_in_write_row_ok(const SwapInDeviceArgs& a, int b, int selected, int newest,
                                                     int misses, bool fast_path) {
  int64_t* counters = a.counters + int64_t(b) * kCounterWords;
  counters[0] = selected;
  counters[1] = selected - newest - misses;
  counters[2] = newest;
  counters[3] = misses;
  counters[4] = int64_t(misses) * a.row_bytes;
  counters[5] = fast_path ? 1 : 0;
  a.load_count[b] = misses;
  a.error[2 * b] = kSwapInOk;
  a.error[2 * b + 1] = -1;
}

__device__ __forceinline__ uint32_t swap_in_hash(int32_t key, int bits) {
  return (static_cast<uint32_t>(key) * 2654435761u) >> (32 - bits);
}

/// Exclusive prefix sum of one int per thread over the block (thread order); *total = the block's sum.
/// Every thread of the block must call it (it holds barriers). Two scans in a row need different `buf`s.
__device__ __forceinline__ int swap_in_block_scan(int v, int* buf, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int x = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int t = __shfl_up_sync(kSwapInFullMask, x, d);
    if (lane >= d) x += t;
  }
  if (lane == 31) buf[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const int own = buf[lane];
    int w = own;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int t = __shfl_up_sync(kSwapInFullMask, w, d);
      if (lane >= d) w += t;
    }
    buf[lane] = w - own;
    if (lane == 31) buf[32] = w;
  }
  __syncthreads();
  *total = buf[32];
  return buf[warp] + x - v;
}

/// Coalesced copy of `count` ints from global to shared memory (dst 16-byte aligned). 16-byte loads when the
/// source is aligned too (a quarter of the instructions), all of a thread's loads issued before its stores.
__device__ __forceinline__ void swap_in_load_ints(int32_t* dst, const int32_t* __restrict__ src, int count) {
  const int tid = threadIdx.x;
  if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
    constexpr int kUnroll = 2;
    const int nv = count >> 2;
    const int4* s4 = reinterpret_cast<const int4*>(src);
    int4* d4 = reinterpret_cast<int4*>(dst);
    for (int base = 0; base < nv; base += kUnroll * kSwapInThreads) {
      int4 r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = base + u * kSwapInThreads + tid;
        if (i < nv) r[u] = s4[i];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = base + u * kSwapInThreads + tid;
        if (i < nv) d4[i] = r[u];
      }
    }
    const int i = nv * 4 + tid;  // at most 3 left
    if (i < count) dst[i] = src[i];
    return;
  }
  constexpr int kUnroll = 4;
  for (int base = 0; base < count; base += kUnroll * kSwapInThreads) {
    int32_t r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kSwapInThreads + tid;
      if (i < count) r[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * kSwapInThreads + tid;
      if (i < count) dst[i] = r[u];
    }
  }
}

/// Sets `count` ints (a multiple of 4, dst 16-byte aligned) of shared memory to -1 with 16-byte stores.
__device__ __forceinline__ void swap_in_fill_minus_one(int32_t* dst, int count) {
  int4* d4 = reinterpret_cast<int4*>(dst);
  for (int i = threadIdx.x; i < count / 4; i += kSwapInThreads) d4[i] = make_int4(-1, -1, -1, -1);
}

/// Entry index of `tok` in the open-addressing table (keys -1 = empty), or -1.
__device__ __forceinline__ int swap_in_lookup(const int32_t* keys, const int16_t* vals, int32_t tok, int bits) {
  const int mask = (1 << bits) - 1;
  uint32_t h = swap_in_hash(tok, bits);
  while (true) {
    const int k = keys[h];
    if (k == tok) return vals[h];
    if (k == -1) return -1;
    h = (h + 1) & mask;
  }
}

/// Inserts tok -> entry; returns false when tok is already present (a duplicate selection).
__device__ __forceinline__ bool swap_in_insert(int32_t* keys, int16_t* vals, int32_t tok, int entry, int bits) {
  const int mask = (1 << bits) - 1;
  uint32_t h = swap_in_hash(tok, bits);
  while (true) {
    const int prev = atomicCAS(&keys[h], -1, tok);
    if (prev == -1) {
      vals[h] = static_cast<int16_t>(entry);
      return true;
    }
    if (prev == tok) return false;
    h = (h + 1) & mask;
  }
}

/// Lowest (entry, code) wins, so the reported error does not depend on thread timing.
__device__ __forceinline__ void swap_in_flag_error(int* s_err, int entry, int code) {
  atomicMin(s_err, entry * 8 + code);
}

// Programmatic dependent launch: no-ops without the launch attribute (or without a PDL predecessor). The wait
// returns once the previous kernel of the stream has completed and its memory is visible; the trigger lets the next
// kernel (if launched with PDL) start its own launch, which still waits for this grid's completion.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Split cluster barrier: arrive early, wait late. A relaxed arrive only guarantees that every block of the cluster
// runs (its shared memory exists) before the first remote store, so it needs no memory ordering.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

/// Launch of `rows` rows of 1024-thread blocks: clusters of C blocks per row (C > 1), PDL when asked.
struct SwapInLaunchConfig {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[2] = {};
  SwapInLaunchConfig(int C, int rows, size_t smem, bool pdl, cudaStream_t stream) {
    cfg.gridDim = dim3(static_cast<unsigned>(rows) * static_cast<unsigned>(C));
    cfg.blockDim = dim3(kSwapInThreads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    if (C > 1) {
      attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
      attr[cfg.numAttrs].val.clusterDim.x = static_cast<unsigned>(C);
      attr[cfg.numAttrs].val.clusterDim.y = 1;
      attr[cfg.numAttrs].val.clusterDim.z = 1;
      ++cfg.numAttrs;
    }
    if (pdl) {
      attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
      ++cfg.numAttrs;
    }
    cfg.attrs = cfg.numAttrs > 0 ? attr : nullptr;
  }
  SwapInLaunchConfig(const SwapInLaunchConfig&) = delete;  // cfg.attrs points into this object
  SwapInLaunchConfig& operator=(const SwapInLaunchConfig&) = delete;
};

}  // namespace hisparse::cuda::detail
