// @brief Fast sparse MLA decode attention on tensor cores (bf16 mma.sync m16n8k16, fp32 accumulate, exp2f).
// Checked against float64 and the exact kernel with stated tolerances; its bits are NOT those of cpu_ref.
//
// One block per (token, group of 64 heads), 8 warps, tiles of 64 index entries, gathered K/V rows double-buffered
// in shared memory by cp.async (skipped entries zero-filled). Warp w owns heads 32*(w&1)..+31; for S = Q K^T it
// takes keys 16*(w>>1)..+15 of the tile, for O += P V the columns 128*(w>>1)..+127. Row maxima and P cross warps
// through shared memory. All shared tiles are 16-byte-chunk XOR-swizzled so ldmatrix is conflict-free.
//
// Accuracy: P is split into two bf16 terms, hi = bf16(p) and lo = bf16(p - hi) (p - hi is exact in fp32), and
// O += P V runs as two MMAs (hi, then lo), so the weights carry ~16 significant bits instead of 8. Rounding P to a
// single bf16 (2^-9 relative per weight) put 0.0086% of "standard" outputs outside FlashMLA's bar (max abs 7.3e-3
// on H200) where outputs cancel. The lo tile lives in the rope columns 512..575 of the current K/V buffer, which
// nothing reads after S is computed (one 128-byte row per head: exactly a head's 64 bf16 weights), so shared
// memory does not grow (it is at the 227 KB limit). Scores: see fast_score_promote() below.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "core/numerics/online_softmax.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/sparse_attention_launch.cuh"

namespace hisparse::cuda {
namespace {

using num::Bf16Bits;
constexpr int kHeads = 64;      // heads per block
constexpr int kTile = 64;       // keys per tile (a free choice here: the fast kernel has no bit contract)
constexpr int kThreads = 256;
constexpr int kRowChunks = kMlaQkDim / 8;  // 72 chunks of 16 bytes per 576-wide row
constexpr int kRowBytes = kMlaQkDim * 2;   // 1152
constexpr int kLoOffset = kMlaVDim * 2;    // byte 1024 of a K/V row: the rope part, free once S is computed
static_assert(kTile * 2 == kRowBytes - kLoOffset, "a head's lo weights must fill exactly one row's rope part");
static_assert(kTile == kHeads, "the lo tile borrows one K/V row per head");

struct __align__(128) FastSmem {
  Bf16Bits q[kHeads * kMlaQkDim];        // [head][576] swizzled
  Bf16Bits kv[2][kTile * kMlaQkDim];     // [key][576] swizzled, double buffer
  Bf16Bits p[kHeads * kTile];            // [head][key] swizzled
  float red[4][kHeads];                  // per key-quarter row maxima, then row sums
  int32_t slot[2][kTile];
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint32_t swz(int row, int chunk) { return uint32_t(chunk ^ (row & 7)) * 16u; }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::); }

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t* r) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t* r) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void mma_bf16(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// Issues the cp.async copies of tile `tile` (entries j0..j0+63 of the index row) into buffer `buf`.
__device__ __forceinline__ void issue_tile(FastSmem& sm, const SparseAttentionArgs& a, const int32_t* idx, int tile,
                                           int buf, int tid) {
  const int j0 = tile * kTile;
  if (tid < kTile) {
    const int j = j0 + tid;
    const int32_t s = j < a.top_k ? idx[j] : -1;
    sm.slot[buf][tid] = (s >= 0 && s < a.slots) ? s : -1;
  }
  const uint32_t base = smem_addr(sm.kv[buf]);
#pragma unroll 2
  for (int u = 0; u < kTile * kRowChunks / kThreads; ++u) {
    const int ch = tid + kThreads * u, row = ch / kRowChunks, c = ch % kRowChunks;
    const int j = j0 + row;
    int32_t s = j < a.top_k ? __ldg(idx + j) : -1;
    const bool valid = s >= 0 && s < a.slots;
    const Bf16Bits* src = valid ? a.kv + int64_t(s) * kMlaQkDim + c * 8 : a.kv;
    cp_async16(base + row * kRowBytes + swz(row, c), valid ? src : static_cast<const void*>(idx), valid);
  }
}

template <bool kPromote>
__global__ void __launch_bounds__(kThreads, 1) sparse_attention_fast_kernel(SparseAttentionArgs a) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  FastSmem& sm = *reinterpret_cast<FastSmem*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int mg = warp & 1, qq = warp >> 1, g = lane >> 2, l4 = lane & 3;
  const int token = blockIdx.y, head0 = blockIdx.x * kHeads;
  const int32_t* idx = a.indices + int64_t(token) * a.top_k;
  const float c = num::softmax_scale(a.sm_scale);
  const int tiles = (a.top_k + kTile - 1) / kTile;
  const float neg_inf = -num::hs_inf();

  // Prologue: Q with tile 0 (group 0), tile 1 (group 1).
  {
    const Bf16Bits* qsrc = a.q + (int64_t(token) * a.heads + head0) * kMlaQkDim;
    const uint32_t base = smem_addr(sm.q);
    for (int u = 0; u < kHeads * kRowChunks / kThreads; ++u) {
      const int ch = tid + kThreads * u, row = ch / kRowChunks, cc = ch % kRowChunks;
      cp_async16(base + row * kRowBytes + swz(row, cc), qsrc + row * kMlaQkDim + cc * 8, true);
    }
  }
  issue_tile(sm, a, idx, 0, 0, tid);
  cp_async_commit();
  if (tiles > 1) issue_tile(sm, a, idx, 1, 1, tid);
  cp_async_commit();

  float acc[2][16][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int n = 0; n < 16; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][n][e] = 0.0f;
  float m_run[4], l_part[4];  // rows r = mt*2 + half: head 32*mg + 16*mt + 8*half + g
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    m_run[r] = neg_inf;
    l_part[r] = 0.0f;
  }

  const uint32_t q_base = smem_addr(sm.q), p_base = smem_addr(sm.p);
  for (int tile = 0; tile < tiles; ++tile) {
    const int buf = tile & 1;
    cp_async_wait1();
    __syncthreads();
    const uint32_t kv_base = smem_addr(sm.kv[buf]);

    // ---- S = Q K^T for 32 heads x 16 keys ----
    float s[2][2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[i][n][e] = 0.0f;
    const int a_row0 = 32 * mg + (lane & 15);
    const int b_row = 16 * qq + (lane & 7) + ((lane >> 4) << 3);
#pragma unroll
    for (int ks = 0; ks < kMlaQkDim / 16; ++ks) {
      uint32_t af[2][4], bf[4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int row = a_row0 + 16 * mt;
        ldsm_x4(q_base + row * kRowBytes + swz(row, 2 * ks + (lane >> 4)), af[mt]);
      }
      ldsm_x4(kv_base + b_row * kRowBytes + swz(b_row, 2 * ks + ((lane >> 3) & 1)), bf);
      if constexpr (kPromote) {
        // Each 16-dim step's products summed from zero by the MMA, then added to s with an IEEE fp32 add.
        float t[2][2][4] = {};
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma_bf16(t[mt][0], af[mt], bf[0], bf[1]);
          mma_bf16(t[mt][1], af[mt], bf[2], bf[3]);
        }
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][nt][e] += t[mt][nt][e];
      } else {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma_bf16(s[mt][0], af[mt], bf[0], bf[1]);
          mma_bf16(s[mt][1], af[mt], bf[2], bf[3]);
        }
      }
    }

    // ---- scale, mask, row maxima across the 4 key quarters ----
    float rmax[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) rmax[r] = neg_inf;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int key = 16 * qq + 8 * nt + 2 * l4;
      const bool v0 = sm.slot[buf][key] >= 0, v1 = sm.slot[buf][key + 1] >= 0;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        s[mt][nt][0] = v0 ? s[mt][nt][0] * c : neg_inf;
        s[mt][nt][1] = v1 ? s[mt][nt][1] * c : neg_inf;
        s[mt][nt][2] = v0 ? s[mt][nt][2] * c : neg_inf;
        s[mt][nt][3] = v1 ? s[mt][nt][3] * c : neg_inf;
        rmax[mt * 2] = fmaxf(rmax[mt * 2], fmaxf(s[mt][nt][0], s[mt][nt][1]));
        rmax[mt * 2 + 1] = fmaxf(rmax[mt * 2 + 1], fmaxf(s[mt][nt][2], s[mt][nt][3]));
      }
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      rmax[r] = fmaxf(rmax[r], __shfl_xor_sync(0xffffffffu, rmax[r], 1));
      rmax[r] = fmaxf(rmax[r], __shfl_xor_sync(0xffffffffu, rmax[r], 2));
      if (l4 == 0) sm.red[qq][32 * mg + 16 * (r >> 1) + 8 * (r & 1) + g] = rmax[r];
    }
    __syncthreads();
    float alpha[4], m_new[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int h = 32 * mg + 16 * (r >> 1) + 8 * (r & 1) + g;
      const float tmax = fmaxf(fmaxf(sm.red[0][h], sm.red[1][h]), fmaxf(sm.red[2][h], sm.red[3][h]));
      m_new[r] = fmaxf(m_run[r], tmax);
      alpha[r] = m_new[r] == neg_inf ? 1.0f : exp2f(m_run[r] - m_new[r]);
      m_run[r] = m_new[r];
      l_part[r] *= alpha[r];
    }
    // ---- P = exp2(t - m), written as bf16; O rescaled ----
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = mt * 2 + half, row = 32 * mg + 16 * mt + 8 * half + g;
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const float p0 = m_new[r] == neg_inf ? 0.0f : exp2f(s[mt][nt][2 * half] - m_new[r]);
          const float p1 = m_new[r] == neg_inf ? 0.0f : exp2f(s[mt][nt][2 * half + 1] - m_new[r]);
          l_part[r] += p0 + p1;
          const uint32_t hi = pack_bf16(p0, p1);
          const uint32_t lo = pack_bf16(p0 - __uint_as_float(hi << 16), p1 - __uint_as_float(hi & 0xffff0000u));
          const uint32_t off = swz(row, 2 * qq + nt) + 4 * l4;
          *reinterpret_cast<uint32_t*>(reinterpret_cast<unsigned char*>(sm.p) + row * (kTile * 2) + off) = hi;
          *reinterpret_cast<uint32_t*>(reinterpret_cast<unsigned char*>(sm.kv[buf]) + row * kRowBytes + kLoOffset +
                                       off) = lo;
        }
#pragma unroll
        for (int n = 0; n < 16; ++n) {
          acc[mt][n][2 * half] *= alpha[r];
          acc[mt][n][2 * half + 1] *= alpha[r];
        }
      }
    }
    __syncthreads();

    // ---- O += P V for 32 heads x 128 columns ----
#pragma unroll
    for (int kstep = 0; kstep < kTile / 16; ++kstep) {
      uint32_t af[2][4], af_lo[2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int row = a_row0 + 16 * mt;
        ldsm_x4(p_base + row * (kTile * 2) + swz(row, 2 * kstep + (lane >> 4)), af[mt]);
        ldsm_x4(kv_base + row * kRowBytes + kLoOffset + swz(row, 2 * kstep + (lane >> 4)), af_lo[mt]);
      }
      const int v_row = 16 * kstep + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
      for (int np = 0; np < 8; ++np) {
        uint32_t bf[4];
        ldsm_x4_t(kv_base + v_row * kRowBytes + swz(v_row, 16 * qq + 2 * np + (lane >> 4)), bf);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma_bf16(acc[mt][2 * np], af[mt], bf[0], bf[1]);
          mma_bf16(acc[mt][2 * np + 1], af[mt], bf[2], bf[3]);
          mma_bf16(acc[mt][2 * np], af_lo[mt], bf[0], bf[1]);
          mma_bf16(acc[mt][2 * np + 1], af_lo[mt], bf[2], bf[3]);
        }
      }
    }
    __syncthreads();
    if (tile + 2 < tiles) issue_tile(sm, a, idx, tile + 2, buf, tid);
    cp_async_commit();
  }

  // ---- Epilogue: row sums across lanes and key quarters, o = acc / l, lse ----
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    l_part[r] += __shfl_xor_sync(0xffffffffu, l_part[r], 1);
    l_part[r] += __shfl_xor_sync(0xffffffffu, l_part[r], 2);
    if (l4 == 0) sm.red[qq][32 * mg + 16 * (r >> 1) + 8 * (r & 1) + g] = l_part[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int mt = r >> 1, half = r & 1, h = 32 * mg + 16 * mt + 8 * half + g;
    const float l = (sm.red[0][h] + sm.red[1][h]) + (sm.red[2][h] + sm.red[3][h]);
    const float inv = l == 0.0f ? 0.0f : 1.0f / l;
    Bf16Bits* o = a.out + (int64_t(token) * a.heads + head0 + h) * kMlaVDim + 128 * qq + 2 * l4;
#pragma unroll
    for (int n = 0; n < 16; ++n)
      *reinterpret_cast<uint32_t*>(o + 8 * n) = pack_bf16(acc[mt][n][2 * half] * inv, acc[mt][n][2 * half + 1] * inv);
    if (qq == 0 && l4 == 0)
      a.lse[int64_t(token) * a.heads + head0 + h] = l == 0.0f ? neg_inf : (m_run[r] + log2f(l)) * num::kLn2;
  }
}

/// Score accumulation: "promote" (default) sums each 16-dim MMA step from zero and adds it to the fp32 scores with
/// an IEEE add, as FlashAttention-3 does for fp8; "mma" lets the tensor core accumulate all 36 steps. The tensor
/// core's fp32 accumulation is not IEEE round-to-nearest, and its error in the scores reached the lse bar (abs 1e-6)
/// on "standard" inputs whose lse is near 0. Measured on H200 over 10,000 validate cases: standard-regime lse max abs
/// error vs float64 8.4e-6 (mma, one element outside the bar) -> 2.4e-6 (promote, none outside), for ~4% of speed
/// (147.8 -> 141.8 TFLOP/s at batch 64 x 128 heads x K 2048). HISPARSE_FAST_SCORE_ACCUM=mma selects the other one,
/// to measure what the promotion costs.
bool fast_score_promote() {
  static const bool promote = [] {
    const char* v = std::getenv("HISPARSE_FAST_SCORE_ACCUM");
    return !(v && std::strcmp(v, "mma") == 0);
  }();
  return promote;
}

template <bool kPromote>
void launch_fast(const SparseAttentionArgs& args, cudaStream_t stream) {
  const size_t smem = sizeof(FastSmem);
  static const bool configured = [&] {
    HS_CUDA_CHECK(cudaFuncSetAttribute(sparse_attention_fast_kernel<kPromote>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned(args.heads / kHeads), unsigned(args.tokens));
  sparse_attention_fast_kernel<kPromote><<<grid, kThreads, smem, stream>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_sparse_attention_fast_mma(const SparseAttentionArgs& args, cudaStream_t stream) {
  if (args.tokens == 0) return;
  if (fast_score_promote())
    launch_fast<true>(args, stream);
  else
    launch_fast<false>(args, stream);
}

}  // namespace hisparse::cuda
