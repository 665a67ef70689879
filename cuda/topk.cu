// @brief Top-k on the GPU, integer-exact with cpu_ref::topk, split over several blocks per row so that one row
// (batch 1) uses many multiprocessors. The threshold key T (the K-th largest key) is found by radix select on
// the 32-bit key in three digits (12, 12, 8 bits); the winners are every key > T and the first `take_eq` keys == T
// by position, written by ascending position.
//
// Each row is cut into G chunks of consecutive positions, each chunk into 16 warp segments (G from the row count,
// the SM count and the HISPARSE_TOPK_* knobs below). Three kernels after a memset, one pass over the scores each
// for the first two:
//   0 memset   hist1[row] = 0, done[row] = 0
//   1 hist     block (row, g): histogram of digit 1 (key bits 31..20) over its chunk, added into hist1[row]; the
//              row's last block to finish (a ticket on done[row]) finds the digit b1 holding the K-th key and the
//              winners still needed inside it (need1), so no later block repeats that search
//   2 compact  warp (row, g, w): copies every key with digit 1 >= b1 of its segment, with its position, to its own
//              list in position order (ballots; no block-wide step): the keys > b1 all win, the keys == b1 are the
//              candidates. These "entries" are few (about 4,000 of 131,072 for spread-out scores) and the lists
//              of a row, taken in (g, w) order, are sorted by position, since segments are consecutive ranges.
//   3 select   block row: digits 2 and 3 over the candidates only (held in shared memory when they fit) -> T and
//              take_eq, then one ordered pass over the row's entries: a block-wide scan of the (> T, == T) counts
//              gives every winner its output slot (key > T at gt_before + min(eq_before, take_eq), the first take_eq
//              keys == T at gt_before + eq_before: where a single sequential pass would put them).
// Rows with length <= K skip 1-2 and step 3 writes 0..n-1 then -1. The entries are at most the row (all scores
// equal): still correct, only slower.
//
// Knobs (environment, read once per process; a GPU sweep picks them):
//   HISPARSE_TOPK_BLOCKS_PER_SM  blocks of steps 1-2 per SM summed over the batch; 0 (default) = as many as fit
//                                on an SM at once (one full wave; the split is floor(this * SMs / rows) per row)
//   HISPARSE_TOPK_MIN_CHUNK      positions per block at least (default 2048; smaller rows get fewer blocks)
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/numerics/topk_args.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/topk.h"

namespace hisparse::cuda {
namespace {

constexpr int kChunkThreads = 512;  // steps 1, 2
constexpr int kChunkWarps = kChunkThreads / 32;
constexpr int kSelectThreads = 1024;  // step 3
constexpr int kItems = 8;             // loads in flight per thread in steps 1 and 2
constexpr int kBins1 = 4096;          // digit 1: bits 31..20
constexpr int kBins2 = 4096;          // digit 2: bits 19..8
constexpr int kBins3 = 256;           // digit 3: bits 7..0
constexpr int kMaxBlocksPerRow = kSelectThreads / kChunkWarps;  // step 3 gives each warp list one thread to scan
constexpr int kSharedEntries = 6144;  // step 3 keeps up to this many entry keys in shared memory

/// Warp-scan block scans: shared storage of one value per warp (the raking default needs one per thread, which
/// step 3's 1024 threads cannot spare beside its histogram and entry keys).
template <typename T, int kThreads>
using BlockScan = cub::BlockScan<T, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;

/// The split of a call: G chunks of `chunk` = 16 * `seg` positions per row, and the workspace layout.
struct TopkPlan {
  int blocks_per_row = 1;
  int64_t chunk = 1, seg = 1;
  size_t hist1 = 0, done = 0, stage = 0, ent_key = 0, ent_pos = 0, ent_count = 0, bytes = 0;
};

/// Device view of the workspace.
struct Work {
  int blocks_per_row;
  int64_t chunk, seg;
  int* hist1;          // [R][kBins1]
  unsigned* done;      // [R] hist blocks finished
  uint32_t* stage;     // [R][2] b1, need1
  uint32_t* ent_key;   // [R][G][16][seg] entry keys, each warp list in position order
  int32_t* ent_pos;    // [R][G][16][seg] their positions
  int* ent_count;      // [R][G][16]
};

/// Block-wide: the digit d with count(digits > d) < need <= count(digits >= d) of histogram `h` (shared), and the
/// winners still needed inside d. Thread t owns a run of bins counted from the top, so an exclusive scan gives the
/// count above each run and exactly one thread's run holds the crossing.
template <int kThreads>
__device__ void select_digit(const int* h, int bins, int need, int* digit, int* need_in_digit,
                             typename BlockScan<int, kThreads>::TempStorage& tmp) {
  const int per = bins >= kThreads ? bins / kThreads : 1;
  const int t = threadIdx.x;
  const int hi = bins - t * per;  // this thread's run is [hi - per, hi)
  const bool owns = hi - per >= 0;
  int sum = 0;
  if (owns)
    for (int b = hi - 1; b >= hi - per; --b) sum += h[b];
  int above = 0;
  BlockScan<int, kThreads>(tmp).ExclusiveSum(sum, above);
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

__global__ void __launch_bounds__(kChunkThreads, 4) topk_hist_kernel(TopkArgs a, Work w) {
  using Scan = BlockScan<int, kChunkThreads>;
  __shared__ typename Scan::TempStorage scan_tmp;
  __shared__ int h[kBins1];
  __shared__ int digit, need;
  __shared__ bool last;
  const ChunkRange c = chunk_range(a, w);
  // Every block of a row with n > K takes a ticket, even one with an empty chunk: the last ticket must exist.
  if (a.length[c.row] <= a.k) return;
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
  // Last-block pattern: this block's additions are visible device-wide before its ticket; the block holding the
  // last ticket sees every block's additions (fence after the ticket, loads from L2).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(w.done + c.row, 1u) == unsigned(w.blocks_per_row - 1);
    __threadfence();
  }
  __syncthreads();
  if (!last) return;
  for (int i = threadIdx.x; i < kBins1; i += kChunkThreads) h[i] = __ldcg(gh + i);
  __syncthreads();
  select_digit<kChunkThreads>(h, kBins1, a.k, &digit, &need, scan_tmp);
  if (threadIdx.x == 0) {
    w.stage[int64_t(c.row) * 2] = uint32_t(digit);
    w.stage[int64_t(c.row) * 2 + 1] = uint32_t(need);
  }
}

__global__ void __launch_bounds__(kChunkThreads, 4) topk_compact_kernel(TopkArgs a, Work w) {
  const ChunkRange c = chunk_range(a, w);
  if (a.length[c.row] <= a.k) return;
  const uint32_t b1 = w.stage[int64_t(c.row) * 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t list = (int64_t(c.row) * w.blocks_per_row + c.g) * kChunkWarps + warp;
  // Offsets inside the segment are 32-bit (positions are int32): fewer registers, no spills at 4 blocks per SM.
  const int64_t seg_begin64 = c.begin + int64_t(warp) * w.seg;
  const int seg_begin = int(seg_begin64 < c.end ? seg_begin64 : c.end);
  const int seg_len = int(seg_begin64 + w.seg < c.end ? w.seg : c.end - seg_begin);
  const float* s = a.scores + int64_t(c.row) * a.stride + seg_begin;
  uint32_t* key_out = w.ent_key + list * w.seg;
  int32_t* pos_out = w.ent_pos + list * w.seg;
  const unsigned below_me = (1u << lane) - 1u;
  int count = 0;
  // Warp-uniform trip counts so the ballots see every lane; position order is (round, e, lane), which is also the
  // order the ballots rank in, so each list comes out sorted by position.
  for (int base = 0; base < seg_len; base += 32 * kItems) {
    uint32_t keys[kItems];
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int i = base + e * 32 + lane;
      keys[e] = i < seg_len ? num::topk_key(__ldg(s + i)) : 0u;
    }
#pragma unroll
    for (int e = 0; e < kItems; ++e) {
      const int i = base + e * 32 + lane;
      const bool in = i < seg_len && (keys[e] >> 20) >= b1;
      const unsigned m = __ballot_sync(0xffffffffu, in);
      if (in) {
        const int at = count + __popc(m & below_me);
        key_out[at] = keys[e];
        pos_out[at] = seg_begin + i;
      }
      count += __popc(m);
    }
  }
  if (lane == 0) w.ent_count[list] = count;
}

/// Largest l with pre[l] <= i (so list l holds flat entry i; empty lists are skipped).
__device__ __forceinline__ int list_of(const int* pre, int L, int i) {
  int lo = 0, hi = L - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (pre[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

__global__ void __launch_bounds__(kSelectThreads) topk_select_kernel(TopkArgs a, Work w) {
  using Scan = BlockScan<int, kSelectThreads>;
  using Scan64 = BlockScan<unsigned long long, kSelectThreads>;
  __shared__ union {
    typename Scan::TempStorage i32;
    typename Scan64::TempStorage u64;
  } scan_tmp;
  __shared__ int h[kBins2];
  __shared__ uint32_t skeys[kSharedEntries];
  __shared__ int pre[kSelectThreads + 1];
  __shared__ int digit, need;
  const int row = blockIdx.x, tid = threadIdx.x, L = w.blocks_per_row * kChunkWarps;
  const int n = a.length[row];
  int32_t* out = a.out + int64_t(row) * a.k;
  if (n <= a.k) {
    for (int i = tid; i < a.k; i += kSelectThreads) out[i] = i < n ? i : -1;
    return;
  }
  const uint32_t b1 = w.stage[int64_t(row) * 2];
  const int need1 = int(w.stage[int64_t(row) * 2 + 1]);
  const int64_t list0 = int64_t(row) * L;
  // Flat numbering of the entries: list l's lie at [pre[l], pre[l+1]), in ascending position overall.
  int my_cnt = tid < L ? w.ent_count[list0 + tid] : 0, my_pre = 0, total = 0;
  Scan(scan_tmp.i32).ExclusiveSum(my_cnt, my_pre, total);
  if (tid < L) pre[tid] = my_pre;
  if (tid == 0) pre[L] = total;
  for (int i = tid; i < kBins2; i += kSelectThreads) h[i] = 0;
  __syncthreads();
  const bool in_smem = total <= kSharedEntries;
  auto load = [&](int i) {
    const int l = list_of(pre, L, i);
    return w.ent_key[(list0 + l) * w.seg + (i - pre[l])];
  };
  // Digit 2 over the candidates (digit 1 == b1; the rest of the entries win outright); every entry key is kept
  // in shared memory if they fit.
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
      if ((k4[e] >> 20) == b1) atomicAdd(&h[(k4[e] >> 8) & 0xfffu], 1);
    }
  }
  __syncthreads();
  auto key_at = [&](int i) { return in_smem ? skeys[i] : load(i); };
  select_digit<kSelectThreads>(h, kBins2, need1, &digit, &need, scan_tmp.i32);
  const uint32_t prefix = (b1 << 12) | uint32_t(digit);
  const int need2 = need;
  // Digit 3 over the entries that match the 24-bit prefix.
  for (int i = tid; i < kBins3; i += kSelectThreads) h[i] = 0;
  __syncthreads();
  for (int i = tid; i < total; i += kSelectThreads) {
    const uint32_t key = key_at(i);
    if ((key >> 8) == prefix) atomicAdd(&h[key & 0xffu], 1);
  }
  __syncthreads();
  select_digit<kSelectThreads>(h, kBins3, need2, &digit, &need, scan_tmp.i32);
  const uint32_t T = (prefix << 8) | uint32_t(digit);
  const int take_eq = need;
  // The ordered pass: thread t owns flat entries [lo, hi); one scan of its (> T, == T) counts places them.
  const int per = (total + kSelectThreads - 1) / kSelectThreads;
  const int lo = min(total, tid * per), hi = min(total, lo + per);
  unsigned gtc = 0, eqc = 0;
  for (int i = lo; i < hi; ++i) {
    const uint32_t key = key_at(i);
    gtc += key > T;
    eqc += key == T;
  }
  unsigned long long before = 0;
  Scan64(scan_tmp.u64).ExclusiveSum((static_cast<unsigned long long>(gtc) << 32) | eqc, before);
  int g_before = int(before >> 32), e_before = int(before & 0xffffffffu);
  if (lo < hi) {
    int l = list_of(pre, L, lo);
    for (int i = lo; i < hi; ++i) {
      while (i >= pre[l + 1]) ++l;
      const uint32_t key = key_at(i);
      if (key > T) {
        out[g_before + min(e_before, take_eq)] = w.ent_pos[(list0 + l) * w.seg + (i - pre[l])];
        ++g_before;
      } else if (key == T) {
        if (e_before < take_eq) out[g_before + e_before] = w.ent_pos[(list0 + l) * w.seg + (i - pre[l])];
        ++e_before;
      }
    }
  }
}

struct DeviceShape {
  int sms = 0, resident = 0;  // SMs; blocks of steps 1-2 resident per SM
};

DeviceShape device_shape() {
  static DeviceShape cache[16];
  int dev = 0;
  HS_CUDA_CHECK(cudaGetDevice(&dev));
  DeviceShape& d = cache[dev & 15];
  if (d.sms == 0) {
    int sms = 0, h = 0, c = 0;
    HS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    HS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&h, topk_hist_kernel, kChunkThreads, 0));
    HS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c, topk_compact_kernel, kChunkThreads, 0));
    d.resident = std::max(1, std::min(h, c));
    d.sms = std::max(sms, 1);
  }
  return d;
}

TopkPlan make_plan(const TopkArgs& a, const TopkKernelConfig& cfg) {
  TopkPlan p;
  const int64_t rows = std::max<int64_t>(a.rows, 1);
  const DeviceShape d = device_shape();
  const int64_t per_sm = cfg.blocks_per_sm > 0 ? cfg.blocks_per_sm : d.resident;
  const int64_t min_chunk = std::max<int64_t>(cfg.min_chunk, 1);
  // floor, not ceil: one block more per row than fits turns one wave into two.
  int64_t g = std::max<int64_t>(1, per_sm * d.sms / rows);
  g = std::min<int64_t>(g, kMaxBlocksPerRow);
  g = std::min<int64_t>(g, std::max<int64_t>(1, (a.stride + min_chunk - 1) / min_chunk));
  // Warp segments are whole 32-wide load rounds so every warp load is one aligned-as-the-row 128-byte line.
  const int64_t per_block = std::max<int64_t>(1, (a.stride + g - 1) / g);
  p.seg = ((per_block + kChunkWarps - 1) / kChunkWarps + 31) / 32 * 32;
  p.chunk = p.seg * kChunkWarps;
  p.blocks_per_row = int(std::max<int64_t>(1, (a.stride + p.chunk - 1) / p.chunk));
  const size_t R = size_t(rows), G = size_t(p.blocks_per_row), S = G * kChunkWarps;
  auto take = [&](size_t bytes) {
    const size_t at = p.bytes;
    p.bytes += (bytes + 255) / 256 * 256;
    return at;
  };
  p.hist1 = take(R * kBins1 * 4 + R * 4);  // hist1 then done: one memset clears both
  p.done = p.hist1 + R * kBins1 * 4;
  p.stage = take(R * 2 * 4);
  p.ent_key = take(R * S * size_t(p.seg) * 4);
  p.ent_pos = take(R * S * size_t(p.seg) * 4);
  p.ent_count = take(R * S * 4);
  return p;
}

Work work_view(const TopkPlan& p, void* ws) {
  auto* b = static_cast<unsigned char*>(ws);
  return Work{p.blocks_per_row,
              p.chunk,
              p.seg,
              reinterpret_cast<int*>(b + p.hist1),
              reinterpret_cast<unsigned*>(b + p.done),
              reinterpret_cast<uint32_t*>(b + p.stage),
              reinterpret_cast<uint32_t*>(b + p.ent_key),
              reinterpret_cast<int32_t*>(b + p.ent_pos),
              reinterpret_cast<int*>(b + p.ent_count)};
}

}  // namespace

size_t topk_workspace_bytes(const TopkArgs& args, const TopkKernelConfig& config) {
  check_topk_args(args);
  return make_plan(args, config).bytes;
}

int topk_blocks_per_row(const TopkArgs& args, const TopkKernelConfig& config) {
  check_topk_args(args);
  return make_plan(args, config).blocks_per_row;
}

void topk_device(const TopkArgs& args, void* workspace, size_t workspace_bytes, const TopkKernelConfig& config,
                 StreamHandle stream) {
  check_topk_args(args);
  if (args.rows == 0) return;
  const TopkPlan plan = make_plan(args, config);
  if (workspace_bytes < plan.bytes || !workspace)
    throw_error("topk: workspace of {} bytes given, {} needed (topk_workspace_bytes)", workspace_bytes, plan.bytes);
  const auto s = static_cast<cudaStream_t>(stream);
  const Work w = work_view(plan, workspace);
  const unsigned blocks = unsigned(int64_t(args.rows) * plan.blocks_per_row);
  HS_CUDA_CHECK(cudaMemsetAsync(w.hist1, 0, size_t(args.rows) * (kBins1 + 1) * 4, s));
  topk_hist_kernel<<<blocks, kChunkThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
  topk_compact_kernel<<<blocks, kChunkThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
  topk_select_kernel<<<unsigned(args.rows), kSelectThreads, 0, s>>>(args, w);
  HS_CUDA_CHECK_LAUNCH();
}

void topk_device(const TopkArgs& args, const TopkKernelConfig& config, StreamHandle stream) {
  check_topk_args(args);
  if (args.rows == 0) return;
  const size_t bytes = topk_workspace_bytes(args, config);
  const auto s = static_cast<cudaStream_t>(stream);
  void* ws = nullptr;
  HS_CUDA_CHECK(cudaMallocAsync(&ws, bytes, s));
  topk_device(args, ws, bytes, config, stream);
  HS_CUDA_CHECK(cudaFreeAsync(ws, s));
}

void topk_host(const TopkArgs& args, const TopkKernelConfig& config) {
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
  ws.resize(topk_workspace_bytes(d, config));
  ws.poison(0x5a);  // every workspace word the kernels read must have been written in this call
  topk_device(d, ws.get(), ws.size(), config, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  out.download(args.out, size_t(args.rows) * size_t(args.k));
}

}  // namespace hisparse::cuda
