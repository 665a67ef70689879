// @brief Fast sparse MLA decode attention on Hopper warpgroup MMA (wgmma, bf16 in, fp32 accumulate), the only
// fast kernel (sm_90a builds). Checked against float64 and the exact kernel with stated tolerances; NOT bit-exact.
//
// One block per (token, group of 64 heads), two warpgroups, tiles of 64 index entries gathered by cp.async into a
// double buffer. Every operand stays in 128-byte-swizzled shared memory (cuda/detail/wgmma.cuh) and the tensor
// cores read it directly, so unlike an mma.sync design no ldmatrix traffic goes through registers. Per tile:
//   S  = Q K^T  warpgroup w: all 64 heads x keys 32w..32w+31, 36 steps of m64n32k16, summed in 9 chunks of 64
//               dimensions that are added to the fp32 scores with IEEE adds at a chunk of 4 steps: the tensor
//               core's own accumulation is not round-to-nearest, and letting it sum all 36 steps put the lse of
//               "standard" inputs outside its 1e-6 bar on the H200 (8.4e-6 max abs error vs 2.4e-6 promoted));
//   softmax     row maxima of both warpgroups meet in shared memory; P = exp2(t - m);
//   O += P V    warpgroup w: 64 heads x output columns 256w..256w+255, m64n256k16 with P from shared memory and
//               V (the first 512 columns of the same K/V rows) read MN-major.
// Accuracy: P is split into hi = bf16(p) and lo = bf16(p - hi) and both are multiplied by V, so the weights carry
// ~16 significant bits; the lo tile lives in the rope column block (512..575) of the current K/V buffer, which
// nothing reads once S is computed. A thread's S rows and O rows are the same two
// heads (the wgmma accumulator layout), so the rescaling needs no exchange.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "core/numerics/online_softmax.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/sparse_attention_launch.cuh"
#include "cuda/detail/wgmma.cuh"

namespace hisparse::cuda {
namespace {

using num::Bf16Bits;
constexpr int kHeads = 64;
constexpr int kTile = 64;
constexpr int kThreads = 256;
constexpr int kRowChunks = kMlaQkDim / 8;                 // 72 chunks of 16 bytes per 576-wide row
constexpr int kColBlockBytes = 64 * 128;                  // one 64-column block of a 64-row tile
constexpr int kTileBytes = (kMlaQkDim / 64) * kColBlockBytes;  // 9 column blocks: 73,728
constexpr int kRopeBlock = kMlaVDim / 64;                 // column block 8: the rope part, reused for P lo
constexpr int kScoreChunks = kMlaQkDim / 64;              // 9 chunks of 4 k16 steps
static_assert(kTile == 64 && kHeads == 64, "the swizzled tiles are 64 rows");

// Shared memory (after aligning the base to 1024 bytes): Q, K/V buffer 0, K/V buffer 1, P hi, row maxima/sums,
// slots of the two buffers.
constexpr uint32_t kOffQ = 0, kOffKv0 = kTileBytes, kOffKv1 = 2 * kTileBytes, kOffP = 3 * kTileBytes;
constexpr uint32_t kOffRed = kOffP + kColBlockBytes;       // float [2][64]
constexpr uint32_t kOffSlot = kOffRed + 2 * 64 * 4;        // int32 [2][64]
constexpr uint32_t kSmemUsed = kOffSlot + 2 * 64 * 4;
constexpr size_t kSmemBytes = kSmemUsed + 1024;            // slack for the 1024-byte alignment

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

#ifdef HISPARSE_SM90A_DEVICE
/// Queues the gather of tile `tile` (index entries j0..j0+63) into the K/V buffer at shared address `dst`. Warp w
/// copies rows w, w+8, ..., w+56, so a row's swizzle phase (row & 7) is the warp's and each lane's three chunk
/// offsets are fixed: per row only the source moves (one index per row, read once by lane i and shuffled).
__device__ __forceinline__ void issue_tile(const SparseAttentionArgs& a, const int32_t* idx, int tile, uint32_t dst,
                                           int32_t* slot, int tid) {
  const int j0 = tile * kTile, warp = tid >> 5, lane = tid & 31;
  if (tid < kTile) {
    const int j = j0 + tid;
    const int32_t s = j < a.top_k ? idx[j] : -1;
    slot[tid] = (s >= 0 && s < a.slots) ? s : -1;
  }
  int32_t my_slot = -1;
  if (lane < kTile / 8) {
    const int j = j0 + warp + 8 * lane;
    my_slot = j < a.top_k ? __ldg(idx + j) : -1;
  }
  const bool third = lane < kRowChunks - 64;  // chunks 64..71 go to lanes 0..7
  const uint32_t d0 = dst + detail::sw128_offset(kTile, warp, lane);
  const uint32_t d1 = dst + detail::sw128_offset(kTile, warp, lane + 32);
  const uint32_t d2 = dst + detail::sw128_offset(kTile, warp, third ? lane + 64 : 0);
#pragma unroll
  for (int i = 0; i < kTile / 8; ++i) {
    const int32_t s = __shfl_sync(0xffffffffu, my_slot, i);
    const bool valid = s >= 0 && s < a.slots;
    const Bf16Bits* src = a.kv + (valid ? int64_t(s) * kMlaQkDim : 0) + lane * 8;
    const uint32_t row_off = uint32_t(i) * 8u * 128u;
    cp_async16(d0 + row_off, src, valid);
    cp_async16(d1 + row_off, src + 256, valid);
    if (third) cp_async16(d2 + row_off, src + 512, valid);
  }
}
#endif

__global__ void __launch_bounds__(kThreads, 1) sparse_attention_wgmma_kernel(SparseAttentionArgs a) {
#ifdef HISPARSE_SM90A_DEVICE
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* sm = smem_raw + (base - raw);
  float* red = reinterpret_cast<float*>(sm + kOffRed);
  int32_t* slot = reinterpret_cast<int32_t*>(sm + kOffSlot);

  const int tid = threadIdx.x, wg = tid >> 7, wi = (tid >> 5) & 3, lane = tid & 31;
  const int g = lane >> 2, l4 = lane & 3;
  const int r0 = 16 * wi + g, r1 = r0 + 8;  // the two heads (rows) this thread holds in S and O
  const int token = blockIdx.y, head0 = blockIdx.x * kHeads;
  const int32_t* idx = a.indices + int64_t(token) * a.top_k;
  const float c = num::softmax_scale(a.sm_scale);
  const int tiles = (a.top_k + kTile - 1) / kTile;
  const float neg_inf = -num::hs_inf();
  const uint32_t q_s = base + kOffQ, p_s = base + kOffP;
  const uint32_t kv_s[2] = {base + kOffKv0, base + kOffKv1};

  // Prologue: Q and tile 0 (one cp.async group); each tile then prefetches the next.
  {
    const Bf16Bits* qsrc = a.q + (int64_t(token) * a.heads + head0) * kMlaQkDim;
    for (int u = 0; u < kHeads * kRowChunks / kThreads; ++u) {
      const int ch = tid + kThreads * u, row = ch / kRowChunks, cc = ch % kRowChunks;
      cp_async16(q_s + detail::sw128_offset(kHeads, row, cc), qsrc + row * kMlaQkDim + cc * 8, true);
    }
  }
  issue_tile(a, idx, 0, kv_s[0], slot, tid);
  cp_async_commit();

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  float m_run[2] = {neg_inf, neg_inf}, l_part[2] = {0.0f, 0.0f};
  const uint64_t q_desc = detail::sw128_desc(q_s, 16, 1024), p_desc = detail::sw128_desc(p_s, 16, 1024);
  float t[2][16];  // score chunks in flight (each chunk's first MMA ignores the old contents)
#pragma unroll
  for (int e = 0; e < 16; ++e) t[0][e] = t[1][e] = 0.0f;

  for (int tile = 0; tile < tiles; ++tile) {
    const int buf = tile & 1;
    const uint32_t kv = kv_s[buf];
    cp_async_wait0();
    detail::fence_proxy_async_shared();
    __syncthreads();
    // Every thread is past its PV of the previous tile, so the other buffer is free: prefetch the next tile into it
    // now (it lands while this tile computes).
    if (tile + 1 < tiles) issue_tile(a, idx, tile + 1, kv_s[buf ^ 1], slot + (buf ^ 1) * kTile, tid);
    cp_async_commit();

    // ---- S = Q K^T: 64 heads x this warpgroup's 32 keys ----
    float s[16];
    // Descriptors move with the address field (bits 0..13, 16-byte units): offsets are added, not rebuilt.
    const uint64_t k_desc = detail::sw128_desc(kv + uint32_t(wg) * 32u * 128u, 16, 1024);
#pragma unroll
    for (int ch = 0; ch < kScoreChunks; ++ch) {
      detail::wgmma_fence();
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint64_t col = (uint64_t(ch) * kColBlockBytes + uint64_t(k) * 32u) >> 4;
        detail::wgmma_m64n32k16_ss(t[ch & 1], q_desc + col, k_desc + col, k > 0);
      }
      detail::wgmma_commit();
      if (ch > 0) {
        detail::wgmma_wait<1>();
#pragma unroll
        for (int e = 0; e < 16; ++e) s[e] = ch == 1 ? t[0][e] : s[e] + t[(ch - 1) & 1][e];
      }
    }
    detail::wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < 16; ++e) s[e] += t[(kScoreChunks - 1) & 1][e];

    // ---- scale, mask, row maxima of both warpgroups ----
    const int32_t* sl = slot + buf * kTile;
    float mx0 = neg_inf, mx1 = neg_inf;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int key = 32 * wg + 8 * j + 2 * l4;
      const bool v0 = sl[key] >= 0, v1 = sl[key + 1] >= 0;
      s[4 * j + 0] = v0 ? s[4 * j + 0] * c : neg_inf;
      s[4 * j + 1] = v1 ? s[4 * j + 1] * c : neg_inf;
      s[4 * j + 2] = v0 ? s[4 * j + 2] * c : neg_inf;
      s[4 * j + 3] = v1 ? s[4 * j + 3] * c : neg_inf;
      mx0 = fmaxf(mx0, fmaxf(s[4 * j + 0], s[4 * j + 1]));
      mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    if (l4 == 0) {
      red[wg * 64 + r0] = mx0;
      red[wg * 64 + r1] = mx1;
    }
    __syncthreads();
    float m_new[2], alpha[2];
    m_new[0] = fmaxf(m_run[0], fmaxf(red[r0], red[64 + r0]));
    m_new[1] = fmaxf(m_run[1], fmaxf(red[r1], red[64 + r1]));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      alpha[h] = m_new[h] == neg_inf ? 1.0f : exp2f(m_run[h] - m_new[h]);
      m_run[h] = m_new[h];
      l_part[h] *= alpha[h];
    }

    // ---- P = exp2(t - m) as hi + lo bf16 tiles; O rescaled ----
    unsigned char* p_hi = sm + kOffP;
    unsigned char* p_lo = sm + (buf ? kOffKv1 : kOffKv0) + kRopeBlock * kColBlockBytes;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = h ? r1 : r0;
        const float p0 = m_new[h] == neg_inf ? 0.0f : exp2f(s[4 * j + 2 * h] - m_new[h]);
        const float p1 = m_new[h] == neg_inf ? 0.0f : exp2f(s[4 * j + 2 * h + 1] - m_new[h]);
        l_part[h] += p0 + p1;
        const uint32_t hi = pack_bf16(p0, p1);
        const uint32_t lo = pack_bf16(p0 - __uint_as_float(hi << 16), p1 - __uint_as_float(hi & 0xffff0000u));
        const uint32_t off = detail::sw128_offset(kHeads, row, 4 * wg + j) + 4u * uint32_t(l4);
        *reinterpret_cast<uint32_t*>(p_hi + off) = hi;
        *reinterpret_cast<uint32_t*>(p_lo + off) = lo;
      }
    }
    if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f))  // the row maxima rarely move late on
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      acc[4 * n + 0] *= alpha[0];
      acc[4 * n + 1] *= alpha[0];
      acc[4 * n + 2] *= alpha[1];
      acc[4 * n + 3] *= alpha[1];
    }
    detail::fence_proxy_async_shared();
    __syncthreads();

    // ---- O += P V: 64 heads x this warpgroup's 256 columns, hi then lo ----
    detail::wgmma_fence();
    const uint64_t lo_desc = detail::sw128_desc(kv + kRopeBlock * kColBlockBytes, 16, 1024);
    const uint64_t v_desc = detail::sw128_desc(kv + uint32_t(wg) * 4u * kColBlockBytes, uint32_t(kColBlockBytes), 1024u);  // MN-major V
#pragma unroll
    for (int ks = 0; ks < kTile / 16; ++ks) {
      const uint64_t vd = v_desc + ((uint64_t(ks) * 16u * 128u) >> 4), pk = (uint64_t(ks) * 32u) >> 4;
      detail::wgmma_m64n256k16_ss_tb(acc, p_desc + pk, vd, 1);
      detail::wgmma_m64n256k16_ss_tb(acc, lo_desc + pk, vd, 1);
    }
    detail::wgmma_commit();
    detail::wgmma_wait<0>();
  }

  // ---- Epilogue: row sums of both warpgroups, o = acc / l, lse ----
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_part[h] += __shfl_xor_sync(0xffffffffu, l_part[h], 1);
    l_part[h] += __shfl_xor_sync(0xffffffffu, l_part[h], 2);
  }
  if (l4 == 0) {
    red[wg * 64 + r0] = l_part[0];
    red[wg * 64 + r1] = l_part[1];
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = h ? r1 : r0;
    const float l = red[row] + red[64 + row];
    const float inv = l == 0.0f ? 0.0f : 1.0f / l;
    Bf16Bits* o = a.out + (int64_t(token) * a.heads + head0 + row) * kMlaVDim + 256 * wg + 2 * l4;
#pragma unroll
    for (int n = 0; n < 32; ++n)
      *reinterpret_cast<uint32_t*>(o + 8 * n) = pack_bf16(acc[4 * n + 2 * h] * inv, acc[4 * n + 2 * h + 1] * inv);
    if (wg == 0 && l4 == 0)
      a.lse[int64_t(token) * a.heads + head0 + row] = l == 0.0f ? neg_inf : (m_run[h] + log2f(l)) * num::kLn2;
  }
#else
  (void)a;
  __trap();  // built without sm_90a: the launcher never selects this kernel
#endif
}

}  // namespace

bool sparse_attention_wgmma_built() {
#ifdef HISPARSE_HAVE_SM90A
  return true;
#else
  return false;
#endif
}

void launch_sparse_attention_wgmma(const SparseAttentionArgs& args, cudaStream_t stream) {
  if (!sparse_attention_wgmma_built())
    throw_error("the wgmma attention kernel was not built (needs CUDA architecture 90a)");
  static const bool configured = [] {
    HS_CUDA_CHECK(cudaFuncSetAttribute(sparse_attention_wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(kSmemBytes)));
    return true;
  }();
  (void)configured;
  const dim3 grid(unsigned(args.heads / kHeads), unsigned(args.tokens));
  sparse_attention_wgmma_kernel<<<grid, kThreads, kSmemBytes, stream>>>(args);
  HS_CUDA_CHECK_LAUNCH();
}

}  // namespace hisparse::cuda
