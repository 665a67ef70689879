// @brief Top-k on the GPU, integer-exact with cpu_ref::topk: radix select of the threshold key over three digit
// passes (11, 11, 10 bits), then one pass in position order that keeps every key above the threshold and the
// first (smallest-position) keys equal to it, writing them by ascending position through a block-wide scan.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "core/numerics/topk_args.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/topk.h"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kBins = 2048;
constexpr int kItems = 8;  // consecutive positions per thread in the ordered pass

struct SelectState {
  uint32_t prefix;   // key bits fixed so far
  uint32_t mask;     // which bits are fixed
  int32_t need;      // winners still to find among keys matching the prefix
};

__global__ void __launch_bounds__(kThreads) topk_kernel(TopkArgs a) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int hist[kBins];
  __shared__ SelectState st;
  __shared__ int run_gt, run_eq;
  const int r = blockIdx.x, tid = threadIdx.x;
  const float* s = a.scores + int64_t(r) * a.stride;
  int32_t* out = a.out + int64_t(r) * a.k;
  const int n = a.length[r];
  if (n <= a.k) {
    for (int i = tid; i < a.k; i += kThreads) out[i] = i < n ? i : -1;
    return;
  }
  if (tid == 0) st = SelectState{0u, 0u, a.k};

  // Three digit passes from the most significant bits.
  const int shifts[3] = {21, 10, 0};
  const int widths[3] = {11, 11, 10};
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = shifts[pass], bins = 1 << widths[pass];
    for (int i = tid; i < bins; i += kThreads) hist[i] = 0;
    __syncthreads();
    const uint32_t prefix = st.prefix, mask = st.mask;
#pragma unroll 4
    for (int i = tid; i < n; i += kThreads) {
      const uint32_t key = num::topk_key(__ldg(s + i));
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & uint32_t(bins - 1)], 1);
    }
    __syncthreads();
    // Warp 0 finds the digit b with count(> b) < need <= count(>= b), scanning from the top bin down.
    if (tid < 32) {
      const int per = bins / 32, lo = tid * per;
      int sum = 0;
      for (int i = 0; i < per; ++i) sum += hist[lo + i];
      // inclusive suffix sum over lanes: lane L gets the total of lanes L..31
      int suffix = sum;
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int v = __shfl_down_sync(0xffffffffu, suffix, off);
        if (tid + off < 32) suffix += v;
      }
      const int above = suffix - sum;  // keys in bins of higher lanes
      const int need = st.need;
      const bool mine = above < need && need <= suffix;
      if (mine) {
        int acc = above;
        for (int i = per - 1; i >= 0; --i) {
          const int c = hist[lo + i];
          if (acc + c >= need) {
            st.prefix = prefix | (uint32_t(lo + i) << shift);
            st.mask = mask | (uint32_t(bins - 1) << shift);
            st.need = need - acc;
            break;
          }
          acc += c;
        }
      }
    }
    __syncthreads();
  }

  // Ordered pass: threshold key T = st.prefix; take all keys > T and the first st.need keys == T.
  const uint32_t T = st.prefix;
  const int take_eq = st.need;
  if (tid == 0) {
    run_gt = 0;
    run_eq = 0;
  }
  __syncthreads();
  for (int base = 0; base < n; base += kThreads * kItems) {
    uint32_t keys[kItems];
    int gt = 0, eq = 0;
    const int first = base + tid * kItems;
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int i = first + e;
      keys[e] = i < n ? num::topk_key(__ldg(s + i)) : 0u;
      if (i < n) {
        gt += keys[e] > T;
        eq += keys[e] == T;
      }
    }
    int packed = (gt << 16) | eq, before = 0, total = 0;
    Scan(scan_tmp).ExclusiveSum(packed, before, total);
    int g_before = run_gt + (before >> 16), e_before = run_eq + (before & 0xffff);
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int i = first + e;
      if (i >= n) break;
      if (keys[e] > T) {
        out[g_before + min(e_before, take_eq)] = i;
        ++g_before;
      } else if (keys[e] == T) {
        if (e_before < take_eq) out[g_before + e_before] = i;
        ++e_before;
      }
    }
    __syncthreads();
    if (tid == 0) {
      run_gt += total >> 16;
      run_eq += total & 0xffff;
    }
    __syncthreads();
  }
}

}  // namespace

void topk_device(const TopkArgs& args, StreamHandle stream) {
  check_topk_args(args);
  if (args.rows == 0) return;
  topk_kernel<<<unsigned(args.rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

void topk_host(const TopkArgs& args) {
  check_topk_args(args);
  if (args.rows == 0) return;
  check_topk_lengths(args);
  detail::OpDeviceArray<float> scores;
  detail::OpDeviceArray<int32_t> len, out;
  TopkArgs d = args;
  d.scores = scores.upload(args.scores, size_t(args.rows) * size_t(args.stride));
  d.length = len.upload(args.length, size_t(args.rows));
  out.resize(size_t(args.rows) * size_t(args.k));
  out.poison(0x7f);
  d.out = out.get();
  topk_device(d, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  out.download(args.out, size_t(args.rows) * size_t(args.k));
}

}  // namespace hisparse::cuda
