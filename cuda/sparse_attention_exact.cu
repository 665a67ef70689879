// @brief Bit-exact sparse MLA decode attention on CUDA cores: fp32 fma in exactly the order of
// core/numerics/online_softmax.h (each thread owns output elements and runs their chains in reference order).
//
// One block per (token, group of 64 heads), 256 threads, tiles of 64 index entries:
//   A  S = Q·K^T: a thread owns 4 heads x 4 keys; Q and K are staged as fp32 in 32-dim chunks (double-buffered
//      through registers) and each accumulator runs its fma chain over d = 0..575 in order.
//   B  tile max, rescale and weights: one thread per head for the sequential parts, all threads for the exp2s.
//   C  O += P·V: a thread owns 8 heads x 16 columns (128 fp32 accumulators), V staged as fp32 in 16-key chunks.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/error.h"
#include "core/numerics/online_softmax.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/sparse_attention.h"
#include "cuda/detail/sparse_attention_launch.cuh"

namespace hisparse::cuda {
namespace {

using num::Bf16Bits;
constexpr int kHeadsPerBlock = 64;
constexpr int kTile = num::kAttentionTileKeys;
constexpr int kThreads = 256;
constexpr int kDimChunk = 32;
constexpr int kDimChunks = kMlaQkDim / kDimChunk;  // 18
constexpr int kVKeys = 16;
static_assert(kTile == 64, "the thread mappings below assume 64-entry tiles");

struct __align__(16) ExactSmem {
  float qs[2][kDimChunk][kHeadsPerBlock];  // Q chunk, [d][head]
  float ks[2][kDimChunk][kTile];           // K chunk, [d][key]
  float vs[2][kVKeys][kMlaVDim];           // V chunk, [key][column]
  float ts[kHeadsPerBlock][kTile + 1];     // scaled scores t, [head][key] (+1: conflict-free per-head scans)
  float ps[kTile][kHeadsPerBlock];         // weights p, [key][head]
  float alpha[kHeadsPerBlock];
  float mnew[kHeadsPerBlock];
  float l[kHeadsPerBlock];
  int32_t slot[kTile];                     // -1 for skipped entries and for entries past the row's end
};

__global__ void __launch_bounds__(kThreads, 1) sparse_attention_exact_kernel(SparseAttentionArgs a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  ExactSmem& sm = *reinterpret_cast<ExactSmem*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int token = blockIdx.y, head0 = blockIdx.x * kHeadsPerBlock;
  const float c = num::softmax_scale(a.sm_scale);
  const Bf16Bits* q_base = a.q + (int64_t(token) * a.heads + head0) * kMlaQkDim;
  const int32_t* idx = a.indices + int64_t(token) * a.top_k;

  // Phase A mapping: 16 head groups x 16 key groups of 4; a warp covers 8 x 4 groups (one 128-byte read each).
  const int hg = (lane & 7) + 8 * (warp & 1), kg = (lane >> 3) + 4 * (warp >> 1);
  // Staging mapping: one head (or key) and one 8-dim segment of the chunk per thread.
  const int st_row = tid & 63, st_seg = tid >> 6;
  // Phase C mapping: warp → 8 heads, lane → columns lane*4 + 128*k.
  const int ph = warp * 8;

  float acc[8][16];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 16; ++e) acc[i][e] = 0.0f;
  float m_run = -num::hs_inf(), l_run = 0.0f;  // meaningful in threads 0..63 (head = tid)

  for (int j0 = 0; j0 < a.top_k; j0 += kTile) {
    const int n = min(kTile, a.top_k - j0);
    if (tid < kTile) {
      int32_t s = tid < n ? idx[j0 + tid] : -1;
      sm.slot[tid] = (s >= 0 && s < a.slots) ? s : -1;
    }
    __syncthreads();

    // ---- Phase A: S = Q K^T, chains over d in order ----
    const int32_t my_slot = sm.slot[st_row];
    const Bf16Bits* k_row = my_slot >= 0 ? a.kv + int64_t(my_slot) * kMlaQkDim : nullptr;
    const Bf16Bits* q_row = q_base + int64_t(st_row) * kMlaQkDim;
    auto load_chunk = [&](int dc, uint4& qv, uint4& kv) {
      const int d = dc * kDimChunk + st_seg * 8;
      qv = __ldg(reinterpret_cast<const uint4*>(q_row + d));
      kv = k_row ? __ldg(reinterpret_cast<const uint4*>(k_row + d)) : make_uint4(0, 0, 0, 0);
    };
    auto store_chunk = [&](int buf, const uint4& qv, const uint4& kv) {
      float f[8];
      detail::unpack_bf16x8(qv, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) sm.qs[buf][st_seg * 8 + e][st_row] = f[e];
      detail::unpack_bf16x8(kv, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) sm.ks[buf][st_seg * 8 + e][st_row] = f[e];
    };
    float s[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[i][j] = 0.0f;
    {
      uint4 qv, kv;
      load_chunk(0, qv, kv);
      store_chunk(0, qv, kv);
    }
    __syncthreads();
    for (int dc = 0; dc < kDimChunks; ++dc) {
      const int buf = dc & 1;
      uint4 qv, kv;
      if (dc + 1 < kDimChunks) load_chunk(dc + 1, qv, kv);
#pragma unroll 8
      for (int dd = 0; dd < kDimChunk; ++dd) {
        const float4 q4 = *reinterpret_cast<const float4*>(&sm.qs[buf][dd][hg * 4]);
        const float4 k4 = *reinterpret_cast<const float4*>(&sm.ks[buf][dd][kg * 4]);
        const float qq[4] = {q4.x, q4.y, q4.z, q4.w}, kk[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) s[i][j] = num::dot_step(s[i][j], qq[i], kk[j]);
      }
      if (dc + 1 < kDimChunks) store_chunk(buf ^ 1, qv, kv);
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool valid = sm.slot[kg * 4 + j] >= 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) sm.ts[hg * 4 + i][kg * 4 + j] = valid ? s[i][j] * c : -num::hs_inf();
    }
    __syncthreads();

    // ---- Phase B: tile max (sequential), rescale, weights ----
    if (tid < kHeadsPerBlock) {
      float tile_max = -num::hs_inf();
      for (int j = 0; j < n; ++j) tile_max = num::hs_max(tile_max, sm.ts[tid][j]);
      const float m_new = num::hs_max(m_run, tile_max);
      sm.alpha[tid] = num::softmax_rescale(m_run, m_new);
      sm.mnew[tid] = m_new;
      m_run = m_new;
    }
    __syncthreads();
    {
      const int h = tid & 63;
      const float m_new = sm.mnew[h];
      for (int j = tid >> 6; j < n; j += kThreads / 64) sm.ps[j][h] = num::softmax_weight(sm.ts[h][j], m_new);
    }
    __syncthreads();
    if (tid < kHeadsPerBlock) {
      float l = l_run * sm.alpha[tid];
      for (int j = 0; j < n; ++j) l = l + sm.ps[j][tid];
      l_run = l;
    }

    // ---- Phase C: O = O * alpha + P V, chains over j in order ----
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float al = sm.alpha[ph + i];
#pragma unroll
      for (int e = 0; e < 16; ++e) acc[i][e] = acc[i][e] * al;
    }
    const int v_chunks = (n + kVKeys - 1) / kVKeys;
    auto load_v = [&](int vc, uint4* r) {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int item = tid + kThreads * u, key = item >> 6, seg = item & 63;
        const int32_t slot = sm.slot[vc * kVKeys + key];
        r[u] = slot >= 0 ? __ldg(reinterpret_cast<const uint4*>(a.kv + int64_t(slot) * kMlaQkDim + seg * 8))
                         : make_uint4(0, 0, 0, 0);
      }
    };
    auto store_v = [&](int buf, const uint4* r) {
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int item = tid + kThreads * u, key = item >> 6, seg = item & 63;
        float f[8];
        detail::unpack_bf16x8(r[u], f);
        float4* dst = reinterpret_cast<float4*>(&sm.vs[buf][key][seg * 8]);
        dst[0] = make_float4(f[0], f[1], f[2], f[3]);
        dst[1] = make_float4(f[4], f[5], f[6], f[7]);
      }
    };
    {
      uint4 r[4];
      load_v(0, r);
      store_v(0, r);
    }
    __syncthreads();
    for (int vc = 0; vc < v_chunks; ++vc) {
      const int buf = vc & 1;
      uint4 r[4];
      if (vc + 1 < v_chunks) load_v(vc + 1, r);
      const int jn = min(kVKeys, n - vc * kVKeys);
      for (int jj = 0; jj < jn; ++jj) {
        const int j = vc * kVKeys + jj;
        const float4 p0 = *reinterpret_cast<const float4*>(&sm.ps[j][ph]);
        const float4 p1 = *reinterpret_cast<const float4*>(&sm.ps[j][ph + 4]);
        const float p[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
        float v[16];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float4 v4 = *reinterpret_cast<const float4*>(&sm.vs[buf][jj][lane * 4 + 128 * k]);
          v[4 * k] = v4.x;
          v[4 * k + 1] = v4.y;
          v[4 * k + 2] = v4.z;
          v[4 * k + 3] = v4.w;
        }
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int e = 0; e < 16; ++e) acc[i][e] = num::hs_fma(p[i], v[e], acc[i][e]);
      }
      if (vc + 1 < v_chunks) store_v(buf ^ 1, r);
      __syncthreads();
    }
  }

  // ---- Epilogue: o = bf16(acc / l), lse ----
  if (tid < kHeadsPerBlock) {
    sm.l[tid] = l_run;
    a.lse[int64_t(token) * a.heads + head0 + tid] = num::softmax_lse(m_run, l_run);
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float l = sm.l[ph + i];
    Bf16Bits* o = a.out + (int64_t(token) * a.heads + head0 + ph + i) * kMlaVDim;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const Bf16Bits b0 = num::softmax_output(acc[i][4 * k], l), b1 = num::softmax_output(acc[i][4 * k + 1], l);
      const Bf16Bits b2 = num::softmax_output(acc[i][4 * k + 2], l), b3 = num::softmax_output(acc[i][4 * k + 3], l);
      uint2 packed;
      packed.x = uint32_t(b0) | (uint32_t(b1) << 16);
      packed.y = uint32_t(b2) | (uint32_t(b3) << 16);
      *reinterpret_cast<uint2*>(o + lane * 4 + 128 * k) = packed;
    }
  }
}

}  // namespace

void launch_sparse_attention_exact(const SparseAttentionArgs& args, cudaStream_t stream) {
  if (args.tokens == 0) return;
  const size_t smem = sizeof(ExactSmem);
  static bool configured = false;
  if (!configured) {
    HS_CUDA_CHECK(cudaFuncSetAttribute(sparse_attention_exact_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(smem)));
    configured = true;
  }
  const dim3 grid(unsigned(args.heads / kHeadsPerBlock), unsigned(args.tokens));
  sparse_attention_exact_kernel<<<grid, kThreads, smem, stream>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

}  // namespace hisparse::cuda
