// @brief Top-k on the GPU, integer-exact with cpu_ref::topk, split over several blocks per row so that one row
// (batch 1) uses many multiprocessors. The threshold key T (the K-th largest key) is found by radix select on
// the 32-bit key in three digits (12, 12, 8 bits); the winners are every key > T and the first `take_eq` keys == T
// by position, written by ascending position.
//
// Each row is cut into G chunks of consecutive positions (G from the row count and the SM count); five steps on
// one stream:
//   0 memset   hist1[row] = 0
//   1 hist     block (row, g): histogram of digit 1 (key bits 31..20) over its chunk, added into hist1[row]
//   2 compact  block (row, g): digit b1 holding the K-th key (from hist1); counts keys with digit 1 > b1 in its
//              chunk (gt1) and copies the keys with digit 1 == b1 (the candidates) to its own region of `cand`
//   3 select   block row: digits 2 and 3 over the candidates only (numbered flat across chunks, held in shared
//              memory when they fit) -> T, take_eq; per chunk, the number of keys > T and == T in the chunks
//              before it (gt_before, eq_before)
//   4 output   block (row, g): one ordered pass over its chunk with a block-wide scan, starting from gt_before[g]
//              and eq_before[g], writes key > T at gt_before + min(eq_before, take_eq) and the first take_eq keys
//              == T at gt_before + eq_before (the positions a single sequential pass would give them)
// Rows with length <= K skip 1-3; step 4 writes 0..n-1 then -1. The candidate count is small for spread-out
// scores (a few thousand of 131,072 for uniform scores) and at most the row (all scores equal): still correct.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/numerics/topk_args.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/topk.h"

namespace hisparse::cuda {
namespace {

constexpr int kChunkThreads = 512;    // steps 1, 2, 4
constexpr int kSelectThreads = 1024;  // step 3
constexpr int kItems = 8;             // consecutive positions per thread in the ordered pass
constexpr int kBins1 = 4096;          // digit 1: bits 31..20
constexpr int kBins2 = 4096;          // digit 2: bits 19..8
constexpr int kBins3 = 256;           // digit 3: bits 7..0
constexpr int64_t kMinChunk = 2048;   // positions per block at least (below, launch cost beats parallelism)
constexpr int kMaxBlocksPerRow = 256;
constexpr int kSharedCandidates = 6144;  // step 3 keeps up to this many candidate keys in shared memory

/// The split of a call: G chunks of `chunk` positions per row, and where each array lies in the workspace.
struct TopkPlan {
  int blocks_per_row = 1;
  int64_t chunk = 1;
  size_t hist1 = 0, cand = 0, cand_count = 0, gt1 = 0, gt_before = 0, eq_before = 0, stage = 0, bytes = 0;
};

int device_sm_count() {
  int dev = 0, sms = 0;
  HS_CUDA_CHECK(cudaGetDevice(&dev));
  HS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return std::max(sms, 1);
}

TopkPlan make_plan(const TopkArgs& a) {
  TopkPlan p;
  const int64_t rows = std::max<int64_t>(a.rows, 1);
  int64_t g = std::max<int64_t>(1, (2 * int64_t(device_sm_count()) + rows - 1) / rows);
  g = std::min<int64_t>(g, kMaxBlocksPerRow);
  g = std::min<int64_t>(g, std::max<int64_t>(1, (a.stride + kMinChunk - 1) / kMinChunk));
  p.chunk = std::max<int64_t>(1, (a.stride + g - 1) / g);
  p.blocks_per_row = int(std::max<int64_t>(1, (a.stride + p.chunk - 1) / p.chunk));
  const size_t R = size_t(rows), G = size_t(p.blocks_per_row);
  auto take = [&](size_t bytes) {
    const size_t at = p.bytes;
    p.bytes += (bytes + 255) / 256 * 256;
    return at;
  };
  p.hist1 = take(R * kBins1 * 4);
  p.cand = take(R * G * size_t(p.chunk) * 4);
  p.cand_count = take(R * G * 4);
  p.gt1 = take(R * G * 4);
  p.gt_before = take(R * G * 4);
  p.eq_before = take(R * G * 4);
  p.stage = take(R * 4 * 4);  // b1, need1, T, take_eq
  return p;
}

/// Device view of the workspace.
struct Work {
  int blocks_per_row;
  int64_t chunk;
  int* hist1;            // [R][kBins1]
  uint32_t* cand;        // [R][G][chunk] candidate keys, per chunk in any order
  int* cand_count;       // [R][G]
  int* gt1;              // [R][G]
  int* gt_before;        // [R][G]
  int* eq_before;        // [R][G]
  uint32_t* stage;       // [R][4] b1, need1, T, take_eq
};

Work work_view(const TopkPlan& p, void* ws) {
  auto* b = static_cast<unsigned char*>(ws);
  return Work{p.blocks_per_row,
              p.chunk,
              reinterpret_cast<int*>(b + p.hist1),
              reinterpret_cast<uint32_t*>(b + p.cand),
              reinterpret_cast<int*>(b + p.cand_count),
              reinterpret_cast<int*>(b + p.gt1),
              reinterpret_cast<int*>(b + p.gt_before),
              reinterpret_cast<int*>(b + p.eq_before),
              reinterpret_cast<uint32_t*>(b + p.stage)};
}

/// Block-wide: the digit d with count(digits > d) < need <= count(digits >= d) of histogram `h` (shared), and the
/// winners still needed inside d. Thread t owns a run of bins counted from the top, so an exclusive scan gives the
/// count above each run and exactly one thread's run holds the crossing.
template <int kThreads>
__device__ void select_digit(const int* h, int bins, int need, int* digit, int* need_in_digit,
                             typename cub::BlockScan<int, kThreads>::TempStorage& tmp) {
  const int per = bins >= kThreads ? bins / kThreads : 1;
  const int t = threadIdx.x;
  const int hi = bins - t * per;  // this thread's run is [hi - per, hi)
  const bool owns = hi - per >= 0;
  int sum = 0;
  if (owns)
    for (int b = hi - 1; b >= hi - per; --b) sum += h[b];
  int above = 0;
  cub::BlockScan<int, kThreads>(tmp).ExclusiveSum(sum, above);
  if (owns && above < need && need <= above + sum) {
    int acc = above;
    for (int b = hi - 1; b >= hi - per; --b) {
      if (acc + h[b] >= need) {
        *digit = b;
        *need_in_digit = need - acc;
        break;
      }
      acc += h[b];
    }
  }
  __syncthreads();
}

struct ChunkRange {
  int row, g;
  int64_t begin, end;
};
__device__ ChunkRange chunk_range(const TopkArgs& a, const Work& w) {
  ChunkRange c;
  c.row = int(blockIdx.x / unsigned(w.blocks_per_row));
  c.g = int(blockIdx.x % unsigned(w.blocks_per_row));
  const int64_t n = a.length[c.row];
  c.begin = int64_t(c.g) * w.chunk;
  c.end = c.begin + w.chunk < n ? c.begin + w.chunk : n;
  return c;
}

__global__ void __launch_bounds__(kChunkThreads) topk_hist_kernel(TopkArgs a, Work w) {
  __shared__ int h[kBins1];
  const ChunkRange c = chunk_range(a, w);
  if (a.length[c.row] <= a.k || c.begin >= c.end) return;
  for (int i = threadIdx.x; i < kBins1; i += kChunkThreads) h[i] = 0;
  __syncthreads();
  const float* s = a.scores + int64_t(c.row) * a.stride;
  // kItems loads in flight per thread before the first atomic: one load at a time leaves HBM mostly idle.
  for (int64_t base = c.begin; base < c.end; base += int64_t(kChunkThreads) * kItems) {
    float v[kItems];
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int64_t i = base + int64_t(e) * kChunkThreads + threadIdx.x;
      v[e] = i < c.end ? __ldg(s + i) : 0.0f;
    }
#pragma unroll
    for (int e = 0; e < kItems; ++e)
      if (base + int64_t(e) * kChunkThreads + threadIdx.x < c.end) atomicAdd(&h[num::topk_key(v[e]) >> 20], 1);
  }
  __syncthreads();
  int* gh = w.hist1 + int64_t(c.row) * kBins1;
  for (int i = threadIdx.x; i < kBins1; i += kChunkThreads)
    if (h[i]) atomicAdd(gh + i, h[i]);
}

__global__ void __launch_bounds__(kChunkThreads) topk_compact_kernel(TopkArgs a, Work w) {
  using Scan = cub::BlockScan<int, kChunkThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int h[kBins1];
  __shared__ int digit, need, count, gt;
  const ChunkRange c = chunk_range(a, w);
  if (a.length[c.row] <= a.k) return;
  const int* gh = w.hist1 + int64_t(c.row) * kBins1;
  for (int i = threadIdx.x; i < kBins1; i += kChunkThreads) h[i] = gh[i];
  if (threadIdx.x == 0) {
    count = 0;
    gt = 0;
  }
  __syncthreads();
  select_digit<kChunkThreads>(h, kBins1, a.k, &digit, &need, scan_tmp);
  const uint32_t b1 = uint32_t(digit);
  const int64_t slot = int64_t(c.row) * w.blocks_per_row + c.g;
  if (c.g == 0 && threadIdx.x == 0) {
    w.stage[int64_t(c.row) * 4] = b1;
    w.stage[int64_t(c.row) * 4 + 1] = uint32_t(need);
  }
  const float* s = a.scores + int64_t(c.row) * a.stride;
  uint32_t* cand = w.cand + slot * w.chunk;
  const int lane = threadIdx.x & 31;
  int my_gt = 0;
  // Warp-uniform trip counts so the ballots see every lane; kItems loads in flight per thread.
  for (int64_t base = c.begin; base < c.end; base += int64_t(kChunkThreads) * kItems) {
    uint32_t keys[kItems];
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int64_t i = base + int64_t(e) * kChunkThreads + threadIdx.x;
      keys[e] = i < c.end ? num::topk_key(__ldg(s + i)) : 0u;
    }
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const bool in = base + int64_t(e) * kChunkThreads + threadIdx.x < c.end;
      const uint32_t d = keys[e] >> 20;
      my_gt += in && d > b1;
      const bool is_cand = in && d == b1;
      const unsigned cm = __ballot_sync(0xffffffffu, is_cand);
      int at = 0;
      if (lane == 0 && cm) at = atomicAdd(&count, __popc(cm));
      at = __shfl_sync(0xffffffffu, at, 0);
      if (is_cand) cand[at + __popc(cm & ((1u << lane) - 1u))] = keys[e];
    }
  }
  for (int off = 16; off > 0; off >>= 1) my_gt += __shfl_xor_sync(0xffffffffu, my_gt, off);
  if (lane == 0 && my_gt) atomicAdd(&gt, my_gt);
  __syncthreads();
  if (threadIdx.x == 0) {
    w.cand_count[slot] = count;
    w.gt1[slot] = gt;
  }
}

/// Largest g with pre[g] <= i (so chunk g holds flat candidate i; empty chunks are skipped).
__device__ __forceinline__ int chunk_of(const int* pre, int G, int i) {
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (pre[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

__global__ void __launch_bounds__(kSelectThreads) topk_select_kernel(TopkArgs a, Work w) {
  using Scan = cub::BlockScan<int, kSelectThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int h[kBins2];
  __shared__ uint32_t skeys[kSharedCandidates];
  __shared__ int pre[kMaxBlocksPerRow + 1], cgt[kMaxBlocksPerRow], ceq[kMaxBlocksPerRow];
  __shared__ int digit, need;
  const int row = blockIdx.x, tid = threadIdx.x, G = w.blocks_per_row;
  if (a.length[row] <= a.k) return;
  const uint32_t b1 = w.stage[int64_t(row) * 4];
  const int need1 = int(w.stage[int64_t(row) * 4 + 1]);
  const uint32_t* cand = w.cand + int64_t(row) * G * w.chunk;
  // Flat numbering of the candidates: chunk g's lie at [pre[g], pre[g+1]).
  int my_cnt = 0, my_pre = 0, total = 0;
  if (tid < G) {
    my_cnt = w.cand_count[int64_t(row) * G + tid];
    cgt[tid] = 0;
    ceq[tid] = 0;
  }
  Scan(scan_tmp).ExclusiveSum(my_cnt, my_pre, total);
  if (tid < G) pre[tid] = my_pre;
  if (tid == 0) pre[G] = total;
  for (int i = tid; i < kBins2; i += kSelectThreads) h[i] = 0;
  __syncthreads();
  const bool in_smem = total <= kSharedCandidates;
  auto load = [&](int i) {
    const int g = chunk_of(pre, G, i);
    return cand[int64_t(g) * w.chunk + (i - pre[g])];
  };
  // Digit 2 over every candidate (all have digit 1 == b1); the candidates are kept in shared memory if they fit.
  for (int i0 = 0; i0 < total; i0 += kSelectThreads * 4) {
    uint32_t k4[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = i0 + e * kSelectThreads + tid;
      k4[e] = i < total ? load(i) : 0u;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = i0 + e * kSelectThreads + tid;
      if (i >= total) continue;
      if (in_smem) skeys[i] = k4[e];
      atomicAdd(&h[(k4[e] >> 8) & 0xfffu], 1);
    }
  }
  __syncthreads();
  auto key_at = [&](int i) { return in_smem ? skeys[i] : load(i); };
  select_digit<kSelectThreads>(h, kBins2, need1, &digit, &need, scan_tmp);
  const uint32_t prefix = (b1 << 12) | uint32_t(digit);
  const int need2 = need;
  // Digit 3 over the candidates that match the 24-bit prefix.
  for (int i = tid; i < kBins3; i += kSelectThreads) h[i] = 0;
  __syncthreads();
  for (int i = tid; i < total; i += kSelectThreads) {
    const uint32_t key = key_at(i);
    if ((key >> 8) == prefix) atomicAdd(&h[key & 0xffu], 1);
  }
  __syncthreads();
  select_digit<kSelectThreads>(h, kBins3, need2, &digit, &need, scan_tmp);
  const uint32_t T = (prefix << 8) | uint32_t(digit);
  // Per chunk: candidates > T and == T (keys outside the candidates are all > T or all < T by digit 1).
  for (int i = tid; i < total; i += kSelectThreads) {
    const uint32_t key = key_at(i);
    if (key > T) atomicAdd(&cgt[chunk_of(pre, G, i)], 1);
    else if (key == T) atomicAdd(&ceq[chunk_of(pre, G, i)], 1);
  }
  __syncthreads();
  int gt_here = 0, eq_here = 0, gt_prev = 0, eq_prev = 0;
  if (tid < G) {
    gt_here = w.gt1[int64_t(row) * G + tid] + cgt[tid];
    eq_here = ceq[tid];
  }
  Scan(scan_tmp).ExclusiveSum(gt_here, gt_prev);
  __syncthreads();
  Scan(scan_tmp).ExclusiveSum(eq_here, eq_prev);
  if (tid < G) {
    w.gt_before[int64_t(row) * G + tid] = gt_prev;
    w.eq_before[int64_t(row) * G + tid] = eq_prev;
  }
  if (tid == 0) {
    w.stage[int64_t(row) * 4 + 2] = T;
    w.stage[int64_t(row) * 4 + 3] = uint32_t(need);
  }
}

__global__ void __launch_bounds__(kChunkThreads) topk_output_kernel(TopkArgs a, Work w) {
  using Scan = cub::BlockScan<int, kChunkThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int run_gt, run_eq;
  const ChunkRange c = chunk_range(a, w);
  const int tid = threadIdx.x;
  const int n = a.length[c.row];
  int32_t* out = a.out + int64_t(c.row) * a.k;
  if (n <= a.k) {
    if (c.g == 0)
      for (int i = tid; i < a.k; i += kChunkThreads) out[i] = i < n ? i : -1;
    return;
  }
  if (c.begin >= c.end) return;
  const int64_t slot = int64_t(c.row) * w.blocks_per_row + c.g;
  const uint32_t T = w.stage[int64_t(c.row) * 4 + 2];
  const int take_eq = int(w.stage[int64_t(c.row) * 4 + 3]);
  if (tid == 0) {
    run_gt = w.gt_before[slot];
    run_eq = w.eq_before[slot];
  }
  __syncthreads();
  const float* s = a.scores + int64_t(c.row) * a.stride;
  for (int64_t base = c.begin; base < c.end; base += kChunkThreads * kItems) {
    uint32_t keys[kItems];
    int gtc = 0, eqc = 0;
    const int64_t first = base + int64_t(tid) * kItems;
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int64_t i = first + e;
      keys[e] = i < c.end ? num::topk_key(__ldg(s + i)) : 0u;
      if (i < c.end) {
        gtc += keys[e] > T;
        eqc += keys[e] == T;
      }
    }
    // Both counts fit 16 bits: at most kChunkThreads * kItems = 4096 per round.
    int before = 0, total = 0;
    Scan(scan_tmp).ExclusiveSum((gtc << 16) | eqc, before, total);
    int g_before = run_gt + (before >> 16), e_before = run_eq + (before & 0xffff);
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int64_t i = first + e;
      if (i >= c.end) break;
      if (keys[e] > T) {
        out[g_before + min(e_before, take_eq)] = int32_t(i);
        ++g_before;
      } else if (keys[e] == T) {
        if (e_before < take_eq) out[g_before + e_before] = int32_t(i);
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

size_t topk_workspace_bytes(const TopkArgs& args) {
  check_topk_args(args);
  return make_plan(args).bytes;
}

void topk_device(const TopkArgs& args, void* workspace, size_t workspace_bytes, StreamHandle stream) {
  check_topk_args(args);
  if (args.rows == 0) return;
  const TopkPlan plan = make_plan(args);
  if (workspace_bytes < plan.bytes || !workspace)
    throw_error("topk: workspace of {} bytes given, {} needed (topk_workspace_bytes)", workspace_bytes, plan.bytes);
  const auto s = static_cast<cudaStream_t>(stream);
  const Work w = work_view(plan, workspace);
  const unsigned blocks = unsigned(int64_t(args.rows) * plan.blocks_per_row);
  HS_CUDA_CHECK(cudaMemsetAsync(w.hist1, 0, size_t(args.rows) * kBins1 * 4, s));
  topk_hist_kernel<<<blocks, kChunkThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
  topk_compact_kernel<<<blocks, kChunkThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
  topk_select_kernel<<<unsigned(args.rows), kSelectThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
  topk_output_kernel<<<blocks, kChunkThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
}

void topk_device(const TopkArgs& args, StreamHandle stream) {
  check_topk_args(args);
  if (args.rows == 0) return;
  const size_t bytes = topk_workspace_bytes(args);
  const auto s = static_cast<cudaStream_t>(stream);
  void* ws = nullptr;
  HS_CUDA_CHECK(cudaMallocAsync(&ws, bytes, s));
  topk_device(args, ws, bytes, stream);
  HS_CUDA_CHECK(cudaFreeAsync(ws, s));
}

void topk_host(const TopkArgs& args) {
  check_topk_args(args);
  if (args.rows == 0) return;
  check_topk_lengths(args);
  detail::OpDeviceArray<float> scores;
  detail::OpDeviceArray<int32_t> len, out;
  detail::OpDeviceArray<unsigned char> ws;
  TopkArgs d = args;
  d.scores = scores.upload(args.scores, size_t(args.rows) * size_t(args.stride));
  d.length = len.upload(args.length, size_t(args.rows));
  out.resize(size_t(args.rows) * size_t(args.k));
  out.poison(0x7f);
  d.out = out.get();
  ws.resize(topk_workspace_bytes(d));
  ws.poison(0x5a);  // every workspace word the kernels read must have been written in this call
  topk_device(d, ws.get(), ws.size(), nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  out.download(args.out, size_t(args.rows) * size_t(args.k));
}

}  // namespace hisparse::cuda
