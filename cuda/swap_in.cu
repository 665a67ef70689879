// @brief Batched swap-in kernel (docs/swap_in.md): one block per (request, layer) row; hit detection through a
// shared-memory hash of the selected tokens, LRU walk, miss list, new LRU order, and optionally the miss copy.
//
// Phases of one block (each ends at a block barrier):
//   0./1. load T and the LRU into shared memory, validate T (range, duplicates), hash every valid token → entry;
//   2. walk the old LRU: a slot whose token is in the hash is a hit (entry → slot), the rest are evictable;
//   3. rank the misses in entry order (warp ballots over per-warp ranges + one block scan), look up their host rows,
//      reject a miss without a host copy;
//   4. rank hits and evictable slots in LRU order (the same way), write the new LRU unless it is unchanged, keep
//      EVICTABLE[0..M-1];
//   5. miss m takes EVICTABLE[m]: slot_of, slot_token and the load lists;
//   6. (fused copy) the block's warps copy its M rows from pinned host memory, a warp per row.
// A row with invalid input writes only its error word; its state stays as it was.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/row_copy.cuh"
#include "cuda/detail/swap_in_cluster.cuh"
#include "cuda/detail/swap_in_common.cuh"
#include "cuda/swap_in.h"

namespace hisparse::cuda {
namespace {

constexpr int kThreads = detail::kSwapInThreads;
constexpr int kWarps = detail::kSwapInWarps;
constexpr int kMaxTopK = detail::kSwapInMaxTopK;
constexpr int kCopyWarpsPerBlock = 8;
constexpr unsigned kFullMask = detail::kSwapInFullMask;
using detail::swap_in_align16;

struct SmemLayout {
  int table_bits = 0;
  size_t keys = 0, vals = 0, sel = 0, slot = 0, lru = 0, ev = 0, aux = 0, total = 0;
};

SmemLayout smem_layout(int32_t H, int32_t K) {
  SmemLayout l;
  l.table_bits = detail::swap_in_table_bits(K);
  const size_t ts = size_t(1) << l.table_bits;
  l.keys = 0;
  l.vals = swap_in_align16(l.keys + ts * 4);
  l.sel = swap_in_align16(l.vals + ts * 2);
  l.slot = swap_in_align16(l.sel + size_t(K) * 4);
  l.lru = swap_in_align16(l.slot + size_t(K) * 4);
  l.ev = swap_in_align16(l.lru + size_t(H) * 4);
  l.aux = swap_in_align16(l.ev + size_t(K) * 4);
  l.total = swap_in_align16(l.aux + size_t(H) * 4);
  return l;
}

__device__ __forceinline__ int block_scan(int v, int* buf, int* total) { return detail::swap_in_block_scan(v, buf, total); }

using detail::swap_in_flag_error;

__global__ void __launch_bounds__(kThreads, 1) swap_in_kernel(SwapInDeviceArgs a, SmemLayout l, bool fused_copy) {
  extern __shared__ __align__(16) unsigned char smem[];
  int32_t* keys = reinterpret_cast<int32_t*>(smem + l.keys);
  int16_t* vals = reinterpret_cast<int16_t*>(smem + l.vals);
  int32_t* sel = reinterpret_cast<int32_t*>(smem + l.sel);
  int32_t* slot_s = reinterpret_cast<int32_t*>(smem + l.slot);
  int32_t* lru_s = reinterpret_cast<int32_t*>(smem + l.lru);
  int32_t* ev = reinterpret_cast<int32_t*>(smem + l.ev);
  int64_t* host_s = reinterpret_cast<int64_t*>(smem + l.keys);  // reuses the hash once lookups are over
  // [H] the old slot_token (phases 0-2), then the new LRU (phase 4): random-order global accesses go through
  // shared memory so that global memory only sees coalesced ones.
  int32_t* aux = reinterpret_cast<int32_t*>(smem + l.aux);
  __shared__ int scan_a[kWarps + 1], scan_b[kWarps + 1];
  __shared__ int s_err, s_valid, s_newest;

  const int b = blockIdx.x, tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const unsigned lanes_below = (1u << lane) - 1u;
  const int H = a.H, K = a.top_k, bits = l.table_bits;
  detail::pdl_wait();  // before any global access: the previous kernel may write every input
  detail::pdl_trigger();
  const int n = a.seq_len[b];
  const int64_t rowK = int64_t(b) * K, rowH = int64_t(b) * H;
  const bool fast = n <= H;
  const int ts = 1 << bits;

  // Phase 0: the row's inputs into shared memory, issued together with the seq_len read instead of after it (one
  // global round trip less on a one-row call); the fast path and padded rows ignore what they did not need.
  detail::swap_in_load_ints(sel, a.selected + rowK, K);
  detail::swap_in_load_ints(lru_s, a.lru + rowH, H);
  detail::swap_in_load_ints(aux, a.slot_token + rowH, H);
  detail::swap_in_fill_minus_one(keys, ts);

  if (n <= 0) {  // padded batch row: outputs say "nothing", state is not touched
    for (int i = tid; i < K; i += kThreads) a.slot_of[rowK + i] = -1;
    if (tid < kCounterWords) a.counters[int64_t(b) * kCounterWords + tid] = 0;
    if (tid == 0) {
      a.load_count[b] = 0;
      a.error[2 * b] = kSwapInOk;
      a.error[2 * b + 1] = -1;
    }
    return;
  }

  if (tid == 0) {
    s_err = INT_MAX;
    s_valid = 0;
    s_newest = 0;
  }
  __syncthreads();

  // Phase 1: validate and insert (token -> entry).
  int my_valid = 0, my_newest = 0;
  for (int i = tid; i < K; i += kThreads) {
    const int t = sel[i];
    slot_s[i] = -1;
    if (t == -1) continue;
    if (t < -1 || t >= n) {
      swap_in_flag_error(&s_err, i, kSwapInOutOfRange);
      continue;
    }
    ++my_valid;
    if (t == n - 1) {
      ++my_newest;
      // The reserved slot. The token still goes into the hash: a slot that (against the usual flow) holds
      // the newest token then joins HITS, as the contract's literal rule says, and duplicates are caught.
      if (!fast) slot_s[i] = H;
    }
    if (!detail::swap_in_insert(keys, vals, t, i, bits)) swap_in_flag_error(&s_err, i, kSwapInDuplicate);
  }
  // One shared atomic per warp, not per thread: 1024 same-address atomics serialise.
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    my_valid += __shfl_xor_sync(kFullMask, my_valid, d);
    my_newest += __shfl_xor_sync(kFullMask, my_newest, d);
  }
  if (lane == 0 && my_valid) atomicAdd(&s_valid, my_valid);
  if (lane == 0 && my_newest) atomicAdd(&s_newest, my_newest);
  __syncthreads();
  const int64_t* host_loc = a.host_loc ? a.host_loc + int64_t(b) * a.host_loc_stride : nullptr;
  auto write_error = [&]() {
    if (tid == 0) {
      a.error[2 * b] = s_err & 7;
      a.error[2 * b + 1] = s_err >> 3;
      a.load_count[b] = 0;
    }
  };
  if (s_err != INT_MAX) {
    write_error();
    return;
  }

  if (fast) {
    // Fast path: slot i holds token i; nothing changes, nothing loads.
    for (int i = tid; i < K; i += kThreads) a.slot_of[rowK + i] = sel[i];
    if (tid == 0) detail::swap_in_write_row_ok(a, b, s_valid, s_newest, 0, true);
    return;
  }

  // Phase 2: walk the old LRU. Bit 31 of lru_s marks a hit.
  {
    constexpr int kUnroll = 4;
    for (int base = 0; base < H; base += kUnroll * kThreads) {
      int tok[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * kThreads + tid;
        tok[u] = j < H ? aux[lru_s[j]] : -1;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * kThreads + tid;
        if (j >= H || tok[u] < 0) continue;
        const int e = detail::swap_in_lookup(keys, vals, tok[u], bits);
        if (e < 0) continue;
        if (tok[u] != n - 1) slot_s[e] = lru_s[j];
        lru_s[j] = static_cast<int>(static_cast<unsigned>(lru_s[j]) | 0x80000000u);
      }
    }
  }
  __syncthreads();

  // Phase 3: misses ranked in entry order. Each warp owns a contiguous range of entries and its lanes stride through
  // it, so consecutive lanes touch consecutive words (no shared-memory bank conflicts, unlike a contiguous chunk
  // per thread); a ballot ranks within the warp and one block scan ranks the warps.
  const int kw = (K + kWarps - 1) / kWarps;
  const int k0 = min(K, warp * kw), k1 = min(K, k0 + kw);
  int my_misses = 0;
  for (int i = k0 + lane; i < k1; i += 32) my_misses += sel[i] >= 0 && slot_s[i] == -1;
  int M = 0;
  int rank = __shfl_sync(kFullMask, block_scan(my_misses, scan_a, &M), 0);  // misses of the warps before
  for (int base = k0; base < k1; base += 32) {  // warp-uniform bounds: every lane reaches each ballot
    const int i = base + lane;
    const bool miss = i < k1 && sel[i] >= 0 && slot_s[i] == -1;
    const unsigned mask = __ballot_sync(kFullMask, miss);
    if (miss) {
      const int r = rank + __popc(mask & lanes_below);
      const int t = sel[i];
      const int64_t hl = host_loc ? host_loc[t] : int64_t(t);
      if (hl < 0)
        swap_in_flag_error(&s_err, i, kSwapInNoHostCopy);
      else if (a.host_pool && hl >= a.host_rows)
        swap_in_flag_error(&s_err, i, kSwapInHostRowOutOfPool);
      slot_s[i] = -2 - r;
      host_s[r] = hl;
    }
    rank += __popc(mask);
  }
  // Phase 4: hits ranked in LRU order (warp ranges and ballots again); new LRU = EVICTABLE[M:] ++ EVICTABLE[:M] ++ HITS.
  const int hw = (H + kWarps - 1) / kWarps;
  const int j0 = min(H, warp * hw), j1 = min(H, j0 + hw);
  int my_hits = 0;
  for (int j = j0 + lane; j < j1; j += 32) my_hits += static_cast<int>(static_cast<unsigned>(lru_s[j]) >> 31);
  int n_hits = 0;
  int hr = __shfl_sync(kFullMask, block_scan(my_hits, scan_b, &n_hits), 0);  // its barriers also publish phase 3
  if (s_err != INT_MAX) {
    write_error();
    return;
  }
  const int E = H - n_hits;
  if (M > E) {
    // More misses than evictable slots: only a corrupt state (a token held by two slots) gets here.
    if (tid == 0) {
      a.error[2 * b] = kSwapInCorruptState;
      a.error[2 * b + 1] = -1;
      a.load_count[b] = 0;
    }
    return;
  }
  int in_place = 1;  // every slot this thread placed keeps its LRU position
  for (int base = j0; base < j1; base += 32) {
    const int j = base + lane;
    const unsigned v = j < j1 ? static_cast<unsigned>(lru_s[j]) : 0u;
    const bool hit = (v >> 31) != 0;
    const unsigned mask = __ballot_sync(kFullMask, hit);
    if (j < j1) {
      const int s = static_cast<int>(v & 0x7fffffffu);
      const int hits_before = hr + __popc(mask & lanes_below);
      int pos;
      if (hit) {
        pos = E + hits_before;
      } else {
        const int er = j - hits_before;  // evictable slots before j
        if (er < M) ev[er] = s;
        pos = er >= M ? er - M : (E - M) + er;
      }
      in_place &= pos == j;
      aux[pos] = s;  // phase 2's reads of aux ended at the barriers of the two scans
    }
    hr += __popc(mask);
  }
  // Steady state of repeated selections: the hits already form the LRU's tail in order, so the new order is
  // the old one and the O(H) write-back is skipped (global memory already holds exactly these values).
  if (!__syncthreads_and(in_place))
    for (int j = tid; j < H; j += kThreads) a.lru[rowH + j] = aux[j];

  // Phase 5: misses take the evictable slots in order.
  for (int i = tid; i < K; i += kThreads) {
    int s = slot_s[i];
    if (s <= -2) {
      const int m = -2 - s;
      s = ev[m];
      a.slot_token[rowH + s] = sel[i];
      a.load_slot[rowK + m] = s;
      a.load_host[rowK + m] = host_s[m];
    }
    a.slot_of[rowK + i] = s;
  }
  if (tid == 0) detail::swap_in_write_row_ok(a, b, s_valid, s_newest, M, false);
  if (!fused_copy || a.host_pool == nullptr) return;

  // Phase 6: the block copies its own misses, a warp per row (ev and host_s are still in shared memory).
  const int vecs = static_cast<int>(a.row_bytes / 16);
  for (int m = warp; m < M; m += kWarps) {
    const uint4* src = reinterpret_cast<const uint4*>(a.host_pool + host_s[m] * a.row_bytes);
    uint4* dst = reinterpret_cast<uint4*>(a.device_kv + (int64_t(b) * (H + 1) + ev[m]) * a.row_bytes);
    detail::copy_row_warp(src, dst, vecs, lane);
  }
}

/// The separate copy: grid (chunks, B), a warp per row, as many blocks per request as its misses need.
__global__ void __launch_bounds__(kCopyWarpsPerBlock * 32)
    swap_in_copy_kernel(const int32_t* __restrict__ load_count, const int64_t* __restrict__ load_host,
                        const int32_t* __restrict__ load_slot, const uint8_t* __restrict__ host_pool,
                        uint8_t* __restrict__ device_kv, int32_t H, int32_t K, int64_t row_bytes) {
  const int b = blockIdx.y;
  const int M = load_count[b];
  const int lane = threadIdx.x & 31;
  const int stride = gridDim.x * kCopyWarpsPerBlock;
  const int vecs = static_cast<int>(row_bytes / 16);
  const int64_t rowK = int64_t(b) * K;
  int m = blockIdx.x * kCopyWarpsPerBlock + (threadIdx.x >> 5);
  for (; m + stride < M; m += 2 * stride) {
    const int m2 = m + stride;
    detail::copy_two_rows_warp(
        reinterpret_cast<const uint4*>(host_pool + load_host[rowK + m] * row_bytes),
        reinterpret_cast<uint4*>(device_kv + (int64_t(b) * (H + 1) + load_slot[rowK + m]) * row_bytes),
        reinterpret_cast<const uint4*>(host_pool + load_host[rowK + m2] * row_bytes),
        reinterpret_cast<uint4*>(device_kv + (int64_t(b) * (H + 1) + load_slot[rowK + m2]) * row_bytes), vecs,
        lane);
  }
  if (m < M)
    detail::copy_row_warp(reinterpret_cast<const uint4*>(host_pool + load_host[rowK + m] * row_bytes),
                          reinterpret_cast<uint4*>(device_kv + (int64_t(b) * (H + 1) + load_slot[rowK + m]) * row_bytes),
                          vecs, lane);
}

}  // namespace

void check_swap_in_fits(int32_t H, int32_t top_k) {
  if (top_k > kMaxTopK) throw_error("cuda swap_in: top_k = {} exceeds the kernel's limit of {}", top_k, kMaxTopK);
  if (H >= (1 << 30)) throw_error("cuda swap_in: device_buffer_size H = {} is too large", H);
  int dev = 0, max_smem = 0;
  HS_CUDA_CHECK(cudaGetDevice(&dev));
  HS_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const size_t need = smem_layout(H, top_k).total + 1024;
  if (need > static_cast<size_t>(max_smem))
    throw_error("cuda swap_in: H = {}, top_k = {} need {} bytes of shared memory per block; this device has {}", H,
                top_k, need, max_smem);
}

int swap_in_cluster_max_batch(const SwapInKernelConfig& k) {
  if (k.cluster == 0) return 0;
  if (k.cluster_max_batch >= 0) return k.cluster_max_batch;
  int dev = 0, sms = 0;  // "one wave": at most one row per SM (the cluster launcher may allow fewer)
  HS_CUDA_CHECK(cudaGetDevice(&dev));
  HS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms / k.cluster;
}

void swap_in_device(const SwapInDeviceArgs& a, CopyMode mode, const SwapInKernelConfig& k, StreamHandle stream_handle) {
  if (a.batch == 0) return;
  auto stream = static_cast<cudaStream_t>(stream_handle);
  const bool copy = a.host_pool != nullptr && a.device_kv != nullptr;
  const bool fused = copy && mode == CopyMode::kFused;
  bool launched = false;
  if (k.cluster > 0) launched = detail::swap_in_cluster_launch(a, fused, k, k.cluster_max_batch, stream);
  if (!launched && k.large_batch_cluster) {
    SwapInKernelConfig one = k;
    one.cluster = 1;
    launched = detail::swap_in_cluster_launch(a, fused, one, INT_MAX, stream);
  }
  if (!launched) {
    const SmemLayout l = smem_layout(a.H, a.top_k);
    static size_t configured_smem = 0;  // raise the opt-in limit once per size class
    if (l.total > 48 * 1024 && l.total > configured_smem) {
      check_swap_in_fits(a.H, a.top_k);
      HS_CUDA_CHECK(cudaFuncSetAttribute(swap_in_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(l.total)));
      configured_smem = l.total;
    }
    const detail::SwapInLaunchConfig lc(1, a.batch, l.total, k.pdl, stream);
    HS_CUDA_CHECK(cudaLaunchKernelEx(&lc.cfg, swap_in_kernel, a, l, fused));
    HS_CUDA_CHECK_LAUNCH();
  }
  if (!copy || mode == CopyMode::kFused) return;
  if (mode == CopyMode::kSeparate) {
    const int chunks = std::max(1, (a.top_k + 2 * kCopyWarpsPerBlock - 1) / (2 * kCopyWarpsPerBlock));
    swap_in_copy_kernel<<<dim3(chunks, a.batch), kCopyWarpsPerBlock * 32, 0, stream>>>(
        a.load_count, a.load_host, a.load_slot, a.host_pool, a.device_kv, a.H, a.top_k, a.row_bytes);
    HS_CUDA_CHECK_LAUNCH();
    return;
  }
  // Copy engine: the load lists must come back to the host before the copies can be queued.
  const size_t B = a.batch, K = a.top_k;
  std::vector<int32_t> count(B), slot(B * K);
  std::vector<int64_t> host(B * K);
  HS_CUDA_CHECK(cudaMemcpyAsync(count.data(), a.load_count, B * 4, cudaMemcpyDeviceToHost, stream));
  HS_CUDA_CHECK(cudaMemcpyAsync(slot.data(), a.load_slot, B * K * 4, cudaMemcpyDeviceToHost, stream));
  HS_CUDA_CHECK(cudaMemcpyAsync(host.data(), a.load_host, B * K * 8, cudaMemcpyDeviceToHost, stream));
  HS_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int64_t rb = a.row_bytes;
  for (size_t b = 0; b < B; ++b) {
    for (int m = 0; m < count[b];) {
      // Merge runs where both sides are consecutive rows: one copy per run.
      int run = 1;
      while (m + run < count[b] && host[b * K + m + run] == host[b * K + m] + run &&
             slot[b * K + m + run] == slot[b * K + m] + run)
        ++run;
      HS_CUDA_CHECK(cudaMemcpyAsync(a.device_kv + (int64_t(b) * (a.H + 1) + slot[b * K + m]) * rb,
                                    a.host_pool + host[b * K + m] * rb, size_t(run) * rb, cudaMemcpyHostToDevice,
                                    stream));
      m += run;
    }
  }
}

}  // namespace hisparse::cuda
