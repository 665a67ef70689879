// @brief One warp copies one row with 16-byte accesses, all of a lane's loads issued before its first store,
// so that reads over PCIe (zero-copy from pinned host memory) keep many requests in flight.
#pragma once

#include <cstdint>

namespace hisparse::cuda::detail {

/// `vecs` = row_bytes / 16. Up to 4 loads per lane in flight per round: 128 vectors = 2 KiB rows in one round
/// (a 1152-byte row is 72 vectors: lanes 0..7 load 3, the others 2).
__device__ __forceinline__ void copy_row_warp(const uint4* __restrict__ src, uint4* __restrict__ dst, int vecs,
                                              int lane) {
  constexpr int kUnroll = 4;
  for (int base = 0; base < vecs; base += 32 * kUnroll) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * 32 + lane;
      if (i < vecs) r[u] = src[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * 32 + lane;
      if (i < vecs) dst[i] = r[u];
    }
  }
}

/// Two rows per warp round: twice the loads in flight for short rows (a 1152-byte row gives a lane 2-3 loads).
__device__ __forceinline__ void copy_two_rows_warp(const uint4* __restrict__ src0, uint4* __restrict__ dst0,
                                                   const uint4* __restrict__ src1, uint4* __restrict__ dst1,
                                                   int vecs, int lane) {
  constexpr int kUnroll = 3;
  for (int base = 0; base < vecs; base += 32 * kUnroll) {
    uint4 a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * 32 + lane;
      if (i < vecs) {
        a[u] = src0[i];
        b[u] = src1[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = base + u * 32 + lane;
      if (i < vecs) {
        dst0[i] = a[u];
        dst1[i] = b[u];
      }
    }
  }
}

}  // namespace hisparse::cuda::detail
