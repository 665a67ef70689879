// @brief Swap-in (docs/swap_in.md) with a thread-block cluster of C blocks per row (default 8): the one-block kernel is
// bound by the instruction/latency chain of a single SM at small batches, so the LRU walk, the new-LRU write and the
// miss copy are split over C SMs. Results equal the one-block kernel's (and cpu_ref's) bit for bit.
//
// Block `rank` of a row's cluster owns LRU positions [rank*L, rank*L + L) and entries [rank*KE, rank*KE + KE):
//   0. loads the whole selection T and the whole slot_token (replicated, so every lookup stays local), its LRU slice;
//   1. validates T and hashes all of it (token -> entry, a replicated table at load <= 1/4 by default); a bitmap of
//      the entries that can miss (valid, not the newest); every block reaches the same verdict, so invalid input and
//      the fast path end here in every block, before any distributed shared memory (DSMEM) access;
//   2. walks its LRU slice: hits set bits in its entry bitmap; a block scan ranks them in LRU order; then every
//      block sends its bitmap and hit count to every other block (one cluster barrier; a relaxed arrive issued
//      after phase 1 only makes sure every block runs before the first remote store);
//   3. (replicated) miss bitmap = valid & ~(OR of all bitmaps); a scan over its words ranks misses in entry order;
//      every block checks every miss's host row, so error decisions agree without a second exchange;
//   4. its slice's slots get their new LRU positions from the cluster-wide ranks and are written to global memory
//      only where they move (positions that keep their slot already hold it); evictable slot of rank m < M serves
//      the m-th miss (slot_of, slot_token, load lists); hit slots write their entry's slot_of;
//   5. (fused copy) its warps copy the rows of the misses its slice served.
// All reads of global state happen in phase 0, before the cluster barrier; all writes after it.
//
// Programmatic dependent launch (PDL, default on): only the shared-memory set-up (table fill, bitmap zeroing) runs
// before griddepcontrol.wait; every input and state read waits for the preceding kernel to complete, so PDL
// overlaps only the launch and block scheduling with that kernel's tail, never work on its data.
//
// Measured on an NVIDIA H200 (one run; bench swap-in, B=1 H=4096 K=2048 all hits, back-to-back / CUDA graph, us):
// PDL off 11.07 / 10.18; PDL on 9.71 / 9.47; PDL + table twice as large (HISPARSE_SWAP_IN_TABLE_BITS=1, now the
// default) 7.97 / 7.71. A variant that split the table by owner block (lookups over DSMEM, one more cluster
// barrier) ran 8.24 / 7.99 at C=8, slower at C=4 and 16, and compute-sanitizer racecheck flagged it: removed.
// Phase timer (HISPARSE_SWAP_IN_PHASES=1, load <= 1/2 table, PDL off; %globaltimer ns): load inputs 990,
// validate+hash 2980, lru walk+scan 2020, bitmap exchange 1440, miss ranks 510, state writes 740, previous call's
// end -> next start 2270 (with PDL on, the next call's blocks start ~8.7 us before that end and wait). %globaltimer
// ticks coarsely; clock64 is finer: a since-removed empty mark read 910 ns but 87 cycles, and validate+hash is
// ~7,250 cycles (~3.7 us at 1.98 GHz), the largest phase and, with the walk's lookups, what the larger table's
// shorter probe chains aim at (no phase table was taken with it).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdio>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/row_copy.cuh"
#include "cuda/detail/swap_in_cluster.cuh"
#include "cuda/detail/swap_in_common.cuh"

namespace hisparse::cuda::detail {

// Phase timer records (see swap_in_cluster.cuh): written only by the kPhases instances.
__device__ unsigned int g_swap_in_phase_count[kSwapInPhaseBlocks];
__device__ unsigned long long g_swap_in_phase_gt[kSwapInPhaseCap * kSwapInPhaseBlocks * kSwapInPhaseMarks];
__device__ long long g_swap_in_phase_clk[kSwapInPhaseCap * kSwapInPhaseBlocks * kSwapInPhaseMarks];

namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = kSwapInThreads;
constexpr int kWarps = kSwapInWarps;
constexpr unsigned kFull = kSwapInFullMask;

struct ClusterLayout {
  int table_bits = 0, W = 0, L = 0;  // W = words of an entry bitmap, L = LRU positions per block (multiple of 4)
  size_t keys = 0, vals = 0, sel = 0, stok = 0, lru = 0, hit_e = 0, bits = 0, missw = 0, mpre = 0, total = 0;
};

ClusterLayout cluster_layout(int32_t H, int32_t K, int C, int extra_bits) {
  ClusterLayout l;
  l.table_bits = swap_in_table_bits(K) + extra_bits;
  l.W = (K + 31) / 32;
  l.L = ((H + C - 1) / C + 3) & ~3;
  const size_t ts = size_t(1) << l.table_bits;
  // keys (ts ints) later hold the host row of each miss (K int64: ts >= 2K); vals (ts int16) later hold the entry,
  // then the slot, of each miss (K ints).
  l.keys = 0;
  l.vals = swap_in_align16(l.keys + ts * 4);
  l.sel = swap_in_align16(l.vals + ts * 2);
  l.stok = swap_in_align16(l.sel + size_t(K) * 4);
  l.lru = swap_in_align16(l.stok + size_t(H) * 4);
  l.hit_e = swap_in_align16(l.lru + size_t(l.L) * 4);
  l.bits = swap_in_align16(l.hit_e + size_t(l.L) * 4);
  l.missw = swap_in_align16(l.bits + size_t(C) * l.W * 4);
  l.mpre = swap_in_align16(l.missw + size_t(l.W) * 4);
  l.total = swap_in_align16(l.mpre + size_t(l.W) * 4);
  return l;
}

template <int C, bool kPhases>
__global__ void __launch_bounds__(kThreads, 1)
    swap_in_cluster_kernel(SwapInDeviceArgs a, ClusterLayout l, bool fused_copy) {
  extern __shared__ __align__(16) unsigned char smem[];
  int32_t* keys = reinterpret_cast<int32_t*>(smem + l.keys);
  int16_t* vals = reinterpret_cast<int16_t*>(smem + l.vals);
  int32_t* sel = reinterpret_cast<int32_t*>(smem + l.sel);
  int32_t* stok = reinterpret_cast<int32_t*>(smem + l.stok);
  int32_t* lru_s = reinterpret_cast<int32_t*>(smem + l.lru);   // the slice; bit 31 marks a hit
  int32_t* hit_e = reinterpret_cast<int32_t*>(smem + l.hit_e); // entry of each hit slot of the slice, -1 else
  uint32_t* bits = reinterpret_cast<uint32_t*>(smem + l.bits); // [C][W] hit bitmap found by each block
  uint32_t* missw = reinterpret_cast<uint32_t*>(smem + l.missw);  // [W] valid non-newest entries, then misses
  int32_t* mpre = reinterpret_cast<int32_t*>(smem + l.mpre);      // [W] misses before each word
  int64_t* host_s = reinterpret_cast<int64_t*>(smem + l.keys);    // [K] once the lookups are over
  int32_t* miss_s = reinterpret_cast<int32_t*>(smem + l.vals);    // [K] entry, then slot, of each miss
  __shared__ int scan_a[kWarps + 1], scan_b[kWarps + 1];
  __shared__ int s_err, s_valid, s_newest;
  __shared__ int s_hits_of[C];

  const int rank = C > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int b = blockIdx.x / C, tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const unsigned lanes_below = (1u << lane) - 1u;
  const int H = a.H, K = a.top_k, bits_n = l.table_bits, W = l.W;
  const int J0 = min(H, rank * l.L), J1 = min(H, J0 + l.L), nl = J1 - J0;
  const int KE = (K + C - 1) / C, E0 = min(K, rank * KE), E1 = min(K, E0 + KE);
  uint32_t* mybits = bits + rank * W;

  // Phase timer (kPhases only): thread 0's stamps (in shared memory: registers are at the 64 limit), stored at the
  // end of a recorded call.
  __shared__ unsigned long long pg[kPhases ? kSwapInPhaseMarks : 1];
  __shared__ long long pc[kPhases ? kSwapInPhaseMarks : 1];
  auto mark = [&](int p) {
    if constexpr (kPhases) {
      if (tid == 0) {
        pg[p] = global_timer_ns();
        pc[p] = clock64();
      }
    }
  };
  auto store_marks = [&]() {
    if constexpr (kPhases) {
      mark(kSwapInPhaseMarks - 1);
      if (tid == 0 && b == 0 && rank < kSwapInPhaseBlocks) {
        const unsigned k = atomicAdd(&g_swap_in_phase_count[rank], 1u) % kSwapInPhaseCap;
        const size_t at = (size_t(k) * kSwapInPhaseBlocks + rank) * kSwapInPhaseMarks;
#pragma unroll
        for (int p = 0; p < kSwapInPhaseMarks; ++p) {
          g_swap_in_phase_gt[at + p] = pg[p];
          g_swap_in_phase_clk[at + p] = pc[p];
        }
      }
    }
  };
  mark(0);

  // Shared-memory set-up reads no global memory, so under PDL it overlaps the previous kernel's tail.
  swap_in_fill_minus_one(keys, 1 << bits_n);
  for (int w = tid; w < W; w += kThreads) mybits[w] = 0;
  if (tid == 0) {
    s_err = INT_MAX;
    s_valid = 0;
    s_newest = 0;
  }
  pdl_wait();  // every input and state word may have been written by the previous kernel
  pdl_trigger();
  mark(1);

  // Phase 0 (issued with the seq_len read: one global round trip on a one-row call).
  const int n = a.seq_len[b];
  const int64_t rowK = int64_t(b) * K, rowH = int64_t(b) * H;
  swap_in_load_ints(sel, a.selected + rowK, K);
  swap_in_load_ints(stok, a.slot_token + rowH, H);
  swap_in_load_ints(lru_s, a.lru + rowH + J0, nl);

  if (n <= 0) {  // padded batch row: outputs say "nothing", state is not touched
    for (int i = E0 + tid; i < E1; i += kThreads) a.slot_of[rowK + i] = -1;
    if (rank == 0) {
      if (tid < kCounterWords) a.counters[int64_t(b) * kCounterWords + tid] = 0;
      if (tid == 0) {
        a.load_count[b] = 0;
        a.error[2 * b] = kSwapInOk;
        a.error[2 * b + 1] = -1;
      }
    }
    return;
  }
  __syncthreads();
  mark(2);

  // Phase 1: validate and hash; warp w of round r covers entries [r*1024 + 32w, +32) = bitmap word r*32 + w.
  int warp_valid = 0;
  for (int base = 0; base < K; base += kThreads) {
    const int i = base + tid;
    const int t = i < K ? sel[i] : -1;
    bool valid = false;
    if (t != -1) {
      if (t < -1 || t >= n)
        swap_in_flag_error(&s_err, i, kSwapInOutOfRange);
      else
        valid = true;
    }
    const bool newest = valid && t == n - 1;
    const unsigned vm = __ballot_sync(kFull, valid);
    const unsigned om = __ballot_sync(kFull, valid && !newest);
    const int w = (base >> 5) + warp;
    if (lane == 0) {
      warp_valid += __popc(vm);
      if (w < W) missw[w] = om;
    }
    if (newest) atomicOr(&s_newest, 1);  // (twice only with a duplicate, which is rejected)
    // The newest token still goes into the hash: a slot holding it (against the usual flow) then joins HITS, as
    // the contract's literal rule says, and duplicates are caught.
    if (valid && !swap_in_insert(keys, vals, t, i, bits_n)) swap_in_flag_error(&s_err, i, kSwapInDuplicate);
  }
  if (lane == 0 && warp_valid) atomicAdd(&s_valid, warp_valid);
  __syncthreads();
  mark(3);
  const int err = s_err;
  // Every block validated the whole selection, so all agree on errors and the fast path, and all return here
  // before any distributed shared memory access or cluster barrier.
  if (err != INT_MAX) {
    if (rank == 0 && tid == 0) {
      a.error[2 * b] = err & 7;
      a.error[2 * b + 1] = err >> 3;
      a.load_count[b] = 0;
    }
    return;
  }
  if (n <= H) {
    // Fast path: slot i holds token i; nothing changes, nothing loads.
    for (int i = E0 + tid; i < E1; i += kThreads) a.slot_of[rowK + i] = sel[i];
    if (rank == 0 && tid == 0) detail::swap_in_write_row_ok(a, b, s_valid, s_newest, 0, true);
    return;
  }
  if constexpr (C > 1) cluster_arrive_relaxed();

  // Phase 2: walk the slice. Each warp owns a contiguous range and its lanes stride through it (ballot-friendly).
  const int hw = (nl + kWarps - 1) / kWarps;
  const int j0 = min(nl, warp * hw), j1 = min(nl, j0 + hw);
  int my_hits = 0;
  {
    constexpr int kUnroll = 4;
    for (int base = j0; base < j1; base += 32 * kUnroll) {
      int s[kUnroll], tok[kUnroll], e[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int jj = base + u * 32 + lane;
        s[u] = jj < j1 ? lru_s[jj] : 0;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int jj = base + u * 32 + lane;
        tok[u] = jj < j1 ? stok[s[u]] : -1;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) e[u] = tok[u] >= 0 ? swap_in_lookup(keys, vals, tok[u], bits_n) : -1;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int jj = base + u * 32 + lane;
        if (jj >= j1) continue;
        hit_e[jj] = e[u] >= 0 && tok[u] != n - 1 ? e[u] : -1;
        if (e[u] < 0) continue;
        atomicOr(&mybits[e[u] >> 5], 1u << (e[u] & 31));
        lru_s[jj] = static_cast<int>(static_cast<unsigned>(s[u]) | 0x80000000u);
        ++my_hits;
      }
    }
  }
  int hc = 0;  // hits of this block's slice
  const int hr = __shfl_sync(kFull, swap_in_block_scan(my_hits, scan_a, &hc), 0);  // of the warps before, in slice
  mark(4);

  int hb_cta = 0, NH = hc;  // hits in the slices before this block's; hits in the whole LRU
  if constexpr (C > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    cluster_wait();  // every block runs (its shared memory exists)
    for (int idx = tid; idx < (C - 1) * W; idx += kThreads) {
      const int d = idx / W, w = idx - d * W;
      uint32_t* remote = cluster.map_shared_rank(bits, d >= rank ? d + 1 : d);
      remote[rank * W + w] = mybits[w];
    }
    if (tid < C) cluster.map_shared_rank(s_hits_of, tid)[rank] = hc;
    // Release/acquire: every block's bitmap and count are here; no remote access after this.
    cluster_arrive();
    cluster_wait();
    NH = 0;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int v = s_hits_of[c];
      NH += v;
      if (c < rank) hb_cta += v;
    }
  }
  const int E = H - NH;
  mark(5);

  // Phase 3 (replicated): misses = valid non-newest entries that no slot holds; ranked in entry order.
  uint32_t mw = 0;
  if (tid < W) {
    uint32_t hit_bits = 0;
#pragma unroll
    for (int c = 0; c < C; ++c) hit_bits |= bits[c * W + tid];
    mw = missw[tid] & ~hit_bits;
  }
  int M = 0;
  const int mp = swap_in_block_scan(__popc(mw), scan_b, &M);
  if (tid < W) {
    missw[tid] = mw;
    mpre[tid] = mp;
  }
  __syncthreads();
  const int64_t* host_loc = a.host_loc ? a.host_loc + int64_t(b) * a.host_loc_stride : nullptr;
  if (M > 0) {
    constexpr int kUnroll = 4;  // the host rows of a thread's misses are fetched together
    for (int base = 0; base < K; base += kUnroll * kThreads) {
      int r[kUnroll];
      int64_t hl[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = base + u * kThreads + tid;
        r[u] = -1;
        if (i < K) {
          const uint32_t w = missw[i >> 5];
          if ((w >> (i & 31)) & 1u) r[u] = mpre[i >> 5] + __popc(w & ((1u << (i & 31)) - 1u));
        }
        if (r[u] >= 0) hl[u] = host_loc ? host_loc[sel[i]] : int64_t(sel[i]);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (r[u] < 0) continue;
        const int i = base + u * kThreads + tid;
        if (hl[u] < 0)
          swap_in_flag_error(&s_err, i, kSwapInNoHostCopy);
        else if (a.host_pool && hl[u] >= a.host_rows)
          swap_in_flag_error(&s_err, i, kSwapInHostRowOutOfPool);
        miss_s[r[u]] = i;
        host_s[r[u]] = hl[u];
      }
    }
    __syncthreads();  // (M is the same for the whole block)
  }
  if constexpr (kPhases) __syncthreads();
  mark(6);
  if (s_err != INT_MAX) {
    if (rank == 0 && tid == 0) {
      a.error[2 * b] = s_err & 7;
      a.error[2 * b + 1] = s_err >> 3;
      a.load_count[b] = 0;
    }
    return;
  }
  if (M > E) {
    // More misses than evictable slots: only a corrupt state (a token held by two slots) gets here.
    if (rank == 0 && tid == 0) {
      a.error[2 * b] = kSwapInCorruptState;
      a.error[2 * b + 1] = -1;
      a.load_count[b] = 0;
    }
    return;
  }

  // Phase 4: new LRU = EVICTABLE[M:] ++ EVICTABLE[:M] ++ HITS; EVICTABLE[m] serves the m-th miss.
  const int evb = J0 - hb_cta;  // evictable slots before this block's slice
  {
    int h = hb_cta + hr;
    for (int base = j0; base < j1; base += 32) {  // warp-uniform bounds: every lane reaches each ballot
      const int jj = base + lane;
      const unsigned v = jj < j1 ? static_cast<unsigned>(lru_s[jj]) : 0u;
      const bool hit = (v >> 31) != 0;
      const unsigned mask = __ballot_sync(kFull, hit);
      if (jj < j1) {
        const int s = static_cast<int>(v & 0x7fffffffu);
        const int j = J0 + jj;
        const int hits_before = h + __popc(mask & lanes_below);
        int pos;
        if (hit) {
          pos = E + hits_before;
          const int e = hit_e[jj];
          if (e >= 0) a.slot_of[rowK + e] = s;
        } else {
          const int er = j - hits_before;
          if (er < M) {
            const int i = miss_s[er];
            a.slot_of[rowK + i] = s;
            a.slot_token[rowH + s] = sel[i];
            a.load_slot[rowK + er] = s;
            a.load_host[rowK + er] = host_s[er];
            miss_s[er] = s;  // this block alone reads rank er again (phase 5)
          }
          pos = er >= M ? er - M : (E - M) + er;
        }
        if (pos != j) a.lru[rowH + pos] = s;
      }
      h += __popc(mask);
    }
  }
  for (int i = E0 + tid; i < E1; i += kThreads) {
    const int t = sel[i];
    if (t == -1)
      a.slot_of[rowK + i] = -1;
    else if (t == n - 1)
      a.slot_of[rowK + i] = H;  // the reserved slot
  }
  if (rank == 0 && tid == 0) detail::swap_in_write_row_ok(a, b, s_valid, s_newest, M, false);
  if constexpr (kPhases) __syncthreads();
  mark(7);

  // Phase 5: the misses this block's slice served, a warp per row.
  if (fused_copy && a.host_pool != nullptr) {
    const int m0 = max(0, min(M, evb)), m1 = max(m0, min(M, evb + (nl - hc)));
    if (m0 < m1) {
      __syncthreads();
      const int vecs = static_cast<int>(a.row_bytes / 16);
      for (int m = m0 + warp; m < m1; m += kWarps) {
        const uint4* src = reinterpret_cast<const uint4*>(a.host_pool + host_s[m] * a.row_bytes);
        uint4* dst = reinterpret_cast<uint4*>(a.device_kv + (int64_t(b) * (H + 1) + miss_s[m]) * a.row_bytes);
        copy_row_warp(src, dst, vecs, lane);
      }
    }
  }
  if constexpr (kPhases) __syncthreads();
  store_marks();
}

/// What one kernel instance needs set up once: the device's limits, the opt-in shared memory it was raised to,
/// whether the last size class checked can run.
struct SizeState {
  size_t max_smem = 0;      // dynamic shared memory a block may use (opt-in limit less the static arrays' slack)
  int sms = 0;
  size_t configured_smem = 0;
  size_t checked_smem = 0;  // the size whose co-residency was checked
  bool runs = false;
  int resident_rows = 0;    // rows (clusters) the whole GPU runs at once
};

template <int C, bool kPhases>
bool launch(const SwapInDeviceArgs& a, bool fused_copy, const SwapInKernelConfig& o, int max_batch,
            cudaStream_t stream) {
  static SizeState state;
  auto kernel = swap_in_cluster_kernel<C, kPhases>;
  if (state.max_smem == 0) {
    int dev = 0, opt_in = 0;
    HS_CUDA_CHECK(cudaGetDevice(&dev));
    HS_CUDA_CHECK(cudaDeviceGetAttribute(&opt_in, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    HS_CUDA_CHECK(cudaDeviceGetAttribute(&state.sms, cudaDevAttrMultiProcessorCount, dev));
    state.max_smem = static_cast<size_t>(opt_in) - 1024;  // the kernel's static __shared__ arrays (< 1 KiB)
  }
  // The larger table only shortens probe chains (results do not depend on its size): where it does not fit (H and
  // K near 6144), a smaller one, down to the default load <= 1/2, runs instead of the slower one-block kernel.
  ClusterLayout l = cluster_layout(a.H, a.top_k, C, o.table_bits);
  for (int x = o.table_bits - 1; x >= 0 && l.total > state.max_smem; --x)
    l = cluster_layout(a.H, a.top_k, C, x);
  if (l.total != state.checked_smem) {
    state.checked_smem = l.total;
    state.runs = l.total <= state.max_smem;
    state.resident_rows = state.sms;  // one 1024-thread block per SM
    if (state.runs && l.total > state.configured_smem) {
      HS_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(l.total)));
      state.configured_smem = l.total;
    }
    if (state.runs && C > 1) {
      if (C > 8) HS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      const SwapInLaunchConfig one(C, 1, l.total, false, nullptr);
      int clusters = 0;
      const cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, kernel, &one.cfg);
      if (e != cudaSuccess) (void)cudaGetLastError();  // treated as "cannot run": the caller falls back
      state.runs = e == cudaSuccess && clusters > 0;
      state.resident_rows = clusters;
    }
    if (!state.runs)  // once per size class: a sweep must know which kernel it timed
      std::fprintf(stderr, "swap-in: a cluster of %d blocks (%zu bytes of shared memory each) cannot run here; "
                   "the one-block kernel runs instead\n", C, l.total);
  }
  if (!state.runs || a.batch > (max_batch >= 0 ? max_batch : state.resident_rows)) return false;
  const SwapInLaunchConfig lc(C, a.batch, l.total, o.pdl, stream);
  HS_CUDA_CHECK(cudaLaunchKernelEx(&lc.cfg, kernel, a, l, fused_copy));
  HS_CUDA_CHECK_LAUNCH();
  return true;
}

template <int C>
bool launch_size(const SwapInDeviceArgs& a, bool fused_copy, const SwapInKernelConfig& o, int max_batch,
                 cudaStream_t stream) {
  return o.phase_timer ? launch<C, true>(a, fused_copy, o, max_batch, stream)
                  : launch<C, false>(a, fused_copy, o, max_batch, stream);
}

}  // namespace

bool swap_in_cluster_launch(const SwapInDeviceArgs& a, bool fused_copy, const SwapInKernelConfig& o, int max_batch,
                            cudaStream_t stream) {
  if (a.top_k > kSwapInMaxTopK) return false;
  switch (o.cluster) {
    case 1: return launch_size<1>(a, fused_copy, o, max_batch, stream);
    case 2: return launch_size<2>(a, fused_copy, o, max_batch, stream);
    case 4: return launch_size<4>(a, fused_copy, o, max_batch, stream);
    case 8: return launch_size<8>(a, fused_copy, o, max_batch, stream);
    case 16: return launch_size<16>(a, fused_copy, o, max_batch, stream);
    default: throw_error("cuda swap_in: cluster size {} is not one of 1, 2, 4, 8, 16", o.cluster);
  }
}

const char* swap_in_phase_name(int p) {
  static const char* const kNames[kSwapInPhaseMarks] = {
      "start",           "pdl wait",   "load inputs",  "validate+hash", "lru walk+scan",
      "bitmap exchange", "miss ranks", "state writes", "copy+end"};
  return p >= 0 && p < kSwapInPhaseMarks ? kNames[p] : "?";
}

void swap_in_phases_reset() {
  const unsigned int zero[kSwapInPhaseBlocks] = {};
  HS_CUDA_CHECK(cudaMemcpyToSymbol(g_swap_in_phase_count, zero, sizeof(zero)));
}

SwapInPhaseRecords swap_in_phases_read() {
  SwapInPhaseRecords r;
  const size_t n = size_t(kSwapInPhaseCap) * kSwapInPhaseBlocks * kSwapInPhaseMarks;
  r.count.resize(kSwapInPhaseBlocks);
  r.gt.resize(n);
  r.clk.resize(n);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  HS_CUDA_CHECK(cudaMemcpyFromSymbol(r.count.data(), g_swap_in_phase_count, r.count.size() * sizeof(unsigned int)));
  HS_CUDA_CHECK(cudaMemcpyFromSymbol(r.gt.data(), g_swap_in_phase_gt, n * sizeof(unsigned long long)));
  HS_CUDA_CHECK(cudaMemcpyFromSymbol(r.clk.data(), g_swap_in_phase_clk, n * sizeof(long long)));
  return r;
}

}  // namespace hisparse::cuda::detail
