// @brief Times every operation of one decode layer at the model's shapes (see step_bench.h). Each op is captured
// `reps` times into a CUDA graph and replayed (a decode step runs as a graph, so launch cost is not in the
// figure); its GEMM weights rotate over enough copies to exceed L2, as they do across a model's layers. The whole
// layer is also captured as one graph, so the sum of the ops can be checked against it.
//
// Who implements what: the indexer, top-k and sparse attention are the project's kernels (cuda/); the dense,
// batched and grouped GEMMs go through cuBLASLt (fp8 E4M3 or bf16 in, bf16 out, fp32 accumulate), loaded when the
// benchmark starts (cublaslt_loader.h: no other command loads it); RMSNorm, RoPE and SiLU-and-multiply are small
// kernels written here for the timing only (same bytes as the real ones).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "bench/gpu/cublaslt_loader.h"
#include "bench/gpu/step_bench.h"
#include "core/decode_layer_ops.h"
#include "core/error.h"
#include "core/numerics/indexer_args.h"
#include "core/numerics/sparse_attention_args.h"
#include "core/numerics/topk_args.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/indexer.h"
#include "cuda/sparse_attention.h"
#include "cuda/topk.h"

#define HS_LT_CHECK(expr)                                                                              \
  do {                                                                                                 \
    const cublasStatus_t st_ = (expr);                                                                 \
    if (st_ != CUBLAS_STATUS_SUCCESS) ::hisparse::throw_error("cuBLASLt: {} returned {}", #expr, int(st_)); \
  } while (0)

namespace hisparse::bench {
using namespace hisparse::cuda;
namespace {

/// Owns device memory (bytes).
class Buf {
 public:
  Buf() = default;
  explicit Buf(size_t bytes) : bytes_(bytes) { HS_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(bytes, 16))); }
  ~Buf() { cudaFree(p_); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <typename T = void>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

__device__ uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/// kind 0: bf16 in [-1/8, 1/8); 1: fp8 E4M3 codes without NaN; 2: fp32 in [-1, 1).
__global__ void fill_kernel(uint8_t* p, size_t n, uint64_t seed, int kind) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t r = mix(seed * 0x9E3779B97F4A7C15ull + i);
    if (kind == 0) {
      reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(float(int(r & 0xffff) - 32768) / 262144.0f);
    } else if (kind == 1) {
      uint8_t b = uint8_t(r) & 0xbf;  // exponent top bit clear: |x| <= 1.875, never NaN
      p[i] = b;
    } else {
      reinterpret_cast<float*>(p)[i] = float(int(r & 0xffffff) - (1 << 23)) / 8388608.0f;
    }
  }
}

void fill(const Buf& b, size_t elems, int kind, uint64_t seed) {
  fill_kernel<<<1024, 256>>>(b.as<uint8_t>(), elems, seed, kind);
  HS_CUDA_CHECK_LAUNCH();
}

__global__ void rmsnorm_kernel(__nv_bfloat16* x, const __nv_bfloat16* w, int cols) {
  __shared__ float part[32];
  __nv_bfloat16* row = x + size_t(blockIdx.x) * cols;
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(row[c]);
    s = fmaf(v, v, s);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) part[0] = rsqrtf(s / float(cols) + 1e-6f);
  }
  __syncthreads();
  const float inv = part[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    row[c] = __float2bfloat16(__bfloat162float(row[c]) * inv * __bfloat162float(w[c]));
}

/// Rotates the `dim` rope columns at `offset` of each of `rows` x `heads` vectors (row stride `stride` elements,
/// head stride `head_stride`), angle from the row index as position.
__global__ void rope_kernel(__nv_bfloat16* x, int rows, int heads, int stride, int head_stride, int offset, int dim) {
  const int pairs = dim / 2;
  const int64_t total = int64_t(rows) * heads * pairs;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int p = int(i % pairs), h = int(i / pairs % heads), r = int(i / pairs / heads);
    __nv_bfloat16* v = x + int64_t(r) * stride + int64_t(h) * head_stride + offset;
    const float ang = float(r) * __powf(10000.0f, -2.0f * p / dim);
    float sn, cs;
    __sincosf(ang, &sn, &cs);
    const float a = __bfloat162float(v[p]), b = __bfloat162float(v[p + pairs]);
    v[p] = __float2bfloat16(a * cs - b * sn);
    v[p + pairs] = __float2bfloat16(a * sn + b * cs);
  }
}

/// out[r][c] = silu(gu[r][c]) * gu[r][inter + c].
__global__ void silu_mul_kernel(const __nv_bfloat16* gu, __nv_bfloat16* out, int rows, int inter) {
  const int64_t total = int64_t(rows) * inter;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, c = i % inter;
    const float g = __bfloat162float(gu[r * 2 * inter + c]), u = __bfloat162float(gu[r * 2 * inter + inter + c]);
    out[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
}

__global__ void empty_kernel() {}

int grid_for(int64_t n) { return int(std::clamp<int64_t>((n + 255) / 256, 1, 132 * 8)); }

/// y[n][m] = x[n][k] . W[m][k]^T, in column-major terms D(m x n) = A^T B with A = W (k x m, ld k) and B = x (k x n,
/// ld k): the TN layout cuBLASLt requires for fp8. `batch` > 1: strided batches (bf16 only here).
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t h, bool fp8, int m, int n, int k, int batch = 1, int64_t ldb = 0, int64_t ldd = 0,
         int64_t stride_a = 0, int64_t stride_b = 0, int64_t stride_d = 0)
      : h_(h) {
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    HS_LT_CHECK(cublaslt().MatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    HS_LT_CHECK(cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    HS_LT_CHECK(cublaslt().MatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    HS_LT_CHECK(cublaslt().MatrixLayoutCreate(&a_, in, k, m, k));
    HS_LT_CHECK(cublaslt().MatrixLayoutCreate(&b_, in, k, n, ldb > 0 ? ldb : k));
    HS_LT_CHECK(cublaslt().MatrixLayoutCreate(&d_, CUDA_R_16BF, m, n, ldd > 0 ? ldd : m));
    if (batch > 1) {
      for (auto [l, s] : {std::pair{a_, stride_a}, std::pair{b_, stride_b}, std::pair{d_, stride_d}}) {
        HS_LT_CHECK(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
        HS_LT_CHECK(cublaslt().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof(s)));
      }
    }
    cublasLtMatmulPreference_t pref;
    HS_LT_CHECK(cublaslt().MatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspace;
    HS_LT_CHECK(cublaslt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    int found = 0;
    cublasLtMatmulHeuristicResult_t res;
    const cublasStatus_t st = cublaslt().MatmulAlgoGetHeuristic(h_, desc_, a_, b_, d_, d_, pref, 1, &res, &found);
    cublaslt().MatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      throw_error("cuBLASLt has no algorithm for {} GEMM m={} n={} k={} batch={}", fp8 ? "fp8" : "bf16", m, n, k, batch);
    algo_ = res.algo;
  }
  ~LtGemm() {
    cublaslt().MatrixLayoutDestroy(a_);
    cublaslt().MatrixLayoutDestroy(b_);
    cublaslt().MatrixLayoutDestroy(d_);
    cublaslt().MatmulDescDestroy(desc_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  void run(const void* w, const void* x, void* y, void* ws, cudaStream_t s) const {
    const float alpha = 1.0f, beta = 0.0f;
    HS_LT_CHECK(cublaslt().Matmul(h_, desc_, &alpha, w, a_, x, b_, &beta, y, d_, y, d_, &algo_, ws, kWorkspace, s));
  }
  static constexpr size_t kWorkspace = 32u << 20;

 private:
  cublasLtHandle_t h_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

/// Median time per call of `op` (µs): `reps` calls captured into one graph, replayed `iters` times.
double graph_us(const std::function<void(cudaStream_t, int)>& op, int reps, int iters, cudaStream_t s) {
  op(s, 0);  // once outside the capture: lazy set-up (function attributes, plans) must not land in the graph
  HS_CUDA_CHECK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  HS_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int r = 0; r < reps; ++r) op(s, r);
  HS_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  HS_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  HS_CUDA_CHECK(cudaEventCreate(&a));
  HS_CUDA_CHECK(cudaEventCreate(&b));
  for (int w = 0; w < 2; ++w) HS_CUDA_CHECK(cudaGraphLaunch(ge, s));
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    HS_CUDA_CHECK(cudaEventRecord(a, s));
    HS_CUDA_CHECK(cudaGraphLaunch(ge, s));
    HS_CUDA_CHECK(cudaEventRecord(b, s));
    HS_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    HS_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e3 / reps);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// A weight matrix [m][k] in `copies` copies (rotated call by call so the weights stream from HBM, not L2).
struct Weight {
  int m = 0, k = 0, copies = 1;
  bool fp8 = false;
  std::unique_ptr<Buf> buf;
  size_t bytes_one() const { return size_t(m) * k * (fp8 ? 1 : 2); }
  const void* at(int call) const { return buf->as<uint8_t>() + bytes_one() * size_t(call % copies); }
};

Weight make_weight(int m, int k, bool fp8, size_t l2, uint64_t seed) {
  Weight w;
  w.m = m;
  w.k = k;
  w.fp8 = fp8;
  w.copies = int(std::clamp<size_t>((2 * l2 + w.bytes_one() - 1) / w.bytes_one(), 1, 16));
  w.buf = std::make_unique<Buf>(w.bytes_one() * w.copies);
  fill(*w.buf, size_t(m) * k * w.copies, fp8 ? 1 : 0, seed);
  return w;
}

struct Shapes {
  int h, q_lora, heads, nope, rope, kv_lora, v, idx_heads, idx_dim, top_k, experts, local_experts, topk_experts,
      shared, inter, dense_inter;
};

}  // namespace

std::vector<StepBenchRow> bench_step(const ModelSpec& m, const StepBenchOptions& o) {
  if (m.hidden_size <= 0 || m.attention_heads <= 0 || m.kv_lora_rank <= 0 || m.q_lora_rank <= 0)
    throw_error("bench step: model '{}' lacks the MLA shapes (hidden_size, attention_heads, kv_lora_rank, "
                "q_lora_rank)", m.name);
  // The indexer's scoring is priced from DeepGEMM's published figures, not from this kernel (sim/cost/
  // decode_cost_model.cpp): a model whose indexer shape the project's kernel lacks (GLM-5: 32 x 128) is measured
  // without it, and its whole-layer graph leaves the scoring out too, so the layer still checks the per-op fit.
  const bool own_indexer = m.indexer_heads == kIndexerHeads && m.indexer_head_dim == kIndexerDim;
  if (!own_indexer)
    fmt::print(stderr, "bench step: model '{}' has an indexer of {} x {}; the project's indexer kernel is {} x {}: "
               "the indexer's scoring is not measured and the whole-layer graph runs without it\n", m.name,
               m.indexer_heads, m.indexer_head_dim, kIndexerHeads, kIndexerDim);
  if (m.kv_lora_rank + m.qk_rope_head_dim != kMlaQkDim)
    throw_error("bench step: model '{}' caches {}-wide rows; the attention kernels take {}", m.name,
                m.kv_lora_rank + m.qk_rope_head_dim, kMlaQkDim);
  if (o.ep < 1 || m.routed_experts % o.ep != 0)
    throw_error("bench step: --ep {} must divide the model's {} routed experts", o.ep, m.routed_experts);
  const Shapes S{m.hidden_size,      m.q_lora_rank,    m.attention_heads,  m.qk_nope_head_dim,
                 m.qk_rope_head_dim, m.kv_lora_rank,   m.v_head_dim,       m.indexer_heads,
                 m.indexer_head_dim, m.top_k,          m.routed_experts,   m.routed_experts / o.ep,
                 m.experts_per_token, m.shared_experts, m.moe_intermediate_size, m.dense_intermediate_size};
  int dev = 0;
  HS_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  HS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = size_t(prop.l2CacheSize);
  cudaStream_t s;
  HS_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  HS_LT_CHECK(cublaslt().Create(&lt));
  Buf ws(LtGemm::kWorkspace);
  const int maxB = *std::max_element(o.batches.begin(), o.batches.end());
  const int64_t maxN = *std::max_element(o.contexts.begin(), o.contexts.end());
  uint64_t seed = o.seed;

  // Weights: every projection in fp8 (as deployed) and in bf16; experts fp8 only (the bf16 copy would not fit
  // beside the caches on an 80 GB part at the largest shapes).
  struct Proj {
    const char* name;
    int out, in;
  };
  const Proj projs[] = {{"q_a", S.q_lora, S.h},
                        {"q_b", S.heads * (S.nope + S.rope), S.q_lora},
                        {"kv_a", S.kv_lora + S.rope, S.h},
                        {"o_proj", S.h, S.heads * S.v},
                        {"indexer_q", S.idx_heads * S.idx_dim, S.q_lora},
                        {"indexer_k", S.idx_dim, S.h},
                        {"indexer_w", S.idx_heads, S.h},
                        {"router", S.experts, S.h},
                        {"shared_gate_up", 2 * S.inter * std::max(1, S.shared), S.h},
                        {"shared_down", S.h, S.inter * std::max(1, S.shared)},
                        {"dense_gate_up", 2 * S.dense_inter, S.h},
                        {"dense_down", S.h, S.dense_inter}};
  std::vector<Weight> w8, w16;
  for (const Proj& p : projs) {
    w8.push_back(make_weight(p.out, p.in, true, l2, ++seed));
    w16.push_back(make_weight(p.out, p.in, false, l2, ++seed));
  }
  auto widx = [&](const std::string& name) {
    for (size_t i = 0; i < std::size(projs); ++i)
      if (name == projs[i].name) return i;
    throw_error("bench step: no projection {}", name);
  };
  // Absorbed w_kv_b per head: [kv_lora][nope] (q side) and [v][kv_lora] (output side), bf16.
  Buf w_uk_heads(size_t(S.heads) * S.kv_lora * S.nope * 2), w_uv_heads(size_t(S.heads) * S.v * S.kv_lora * 2);
  fill(w_uk_heads, size_t(S.heads) * S.kv_lora * S.nope, 0, ++seed);
  fill(w_uv_heads, size_t(S.heads) * S.v * S.kv_lora, 0, ++seed);
  Buf experts(size_t(S.local_experts) * 3 * S.inter * S.h);  // fp8: gate_up [2I][h] then down [h][I] per expert
  fill(experts, experts.bytes(), 1, ++seed);
  Buf norm_w(size_t(std::max(S.h, S.q_lora)) * 2);
  fill(norm_w, std::max(S.h, S.q_lora), 0, ++seed);

  // Activations at the largest batch (bf16 and an fp8 copy of each GEMM input).
  const size_t widest = size_t(std::max({S.h, S.heads * (S.nope + S.rope), 2 * S.dense_inter, S.heads * kMlaQkDim,
                                         S.idx_heads * S.idx_dim, S.heads * S.v}));
  Buf x16(size_t(maxB) * widest * 2), x8(size_t(maxB) * widest), y16(size_t(maxB) * widest * 2),
      z16(size_t(maxB) * widest * 2);
  fill(x16, size_t(maxB) * widest, 0, ++seed);
  fill(x8, size_t(maxB) * widest, 1, ++seed);
  // Routed (token, expert) pairs on this GPU: batch x experts_per_token, rounded up per active expert.
  const int64_t tok_pairs_max = int64_t(maxB) * S.topk_experts + S.local_experts;
  Buf moe_in8(size_t(tok_pairs_max) * S.h), moe_gu(size_t(tok_pairs_max) * 2 * S.inter * 2),
      moe_act8(size_t(tok_pairs_max) * S.inter), moe_out(size_t(tok_pairs_max) * S.h * 2);
  fill(moe_in8, moe_in8.bytes(), 1, ++seed);
  fill(moe_act8, moe_act8.bytes(), 1, ++seed);

  // Indexer keys and scores, attention KV pool.
  const int64_t key_rows = int64_t(maxB) * maxN;
  Buf keys(size_t(key_rows) * S.idx_dim * 2), scores(size_t(maxB) * maxN * 4), idx_w(size_t(maxB) * S.idx_heads * 4);
  fill(keys, size_t(key_rows) * S.idx_dim, 0, ++seed);  // bf16 keys; the fp8 path reads the first half as codes
  Buf key_scale(size_t(key_rows) * 4);
  fill(key_scale, size_t(key_rows), 2, ++seed);
  fill(idx_w, size_t(maxB) * S.idx_heads, 2, ++seed);
  // Without the indexer's scoring the scores would stay all equal, top-k's worst case: random scores instead.
  if (!own_indexer) fill(scores, size_t(maxB) * maxN, 2, ++seed);
  std::vector<int64_t> key_start(maxB);
  for (int b = 0; b < maxB; ++b) key_start[b] = int64_t(b) * maxN;
  Buf d_key_start(size_t(maxB) * 8), d_len(size_t(maxB) * 4), topk_out(size_t(maxB) * S.top_k * 4);
  HS_CUDA_CHECK(cudaMemcpy(d_key_start.as(), key_start.data(), key_start.size() * 8, cudaMemcpyHostToDevice));
  const int64_t slots = 65536;
  Buf kv(size_t(slots) * kMlaQkDim * 2), att_idx(size_t(maxB) * S.top_k * 4), att_out(size_t(maxB) * S.heads * kMlaVDim * 2),
      att_lse(size_t(maxB) * S.heads * 4), att_q(size_t(maxB) * S.heads * kMlaQkDim * 2);
  fill(kv, size_t(slots) * kMlaQkDim, 0, ++seed);
  fill(att_q, size_t(maxB) * S.heads * kMlaQkDim, 0, ++seed);
  {
    std::vector<int32_t> idx(size_t(maxB) * S.top_k);
    uint64_t r = o.seed;
    for (auto& v : idx) v = int32_t((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 33) % int32_t(slots);
    HS_CUDA_CHECK(cudaMemcpy(att_idx.as(), idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
  }
  HS_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<StepBenchRow> rows;
  // FLOPs and bytes of each op come from core/decode_layer_ops.h, the list the calibration predicts with.
  auto add = [&](const std::string& op, const char* family, const char* dtype, const char* impl, int B, int64_t n,
                 double us) {
    double flops = 0, bytes = 0;
    if (op != "graph_gap" && std::string(family) != "layer") {
      bool found = false;
      for (const DecodeOpWork& w : decode_layer_ops(m, B, n, o.ep, true))
        if (w.op == op && w.dtype == dtype) flops = w.flops, bytes = w.bytes, found = true;
      if (!found) throw_error("bench step: {} ({}) is not in core/decode_layer_ops.h", op, dtype);
    }
    rows.push_back(StepBenchRow{op, family, dtype, impl, B, n, us, flops, bytes});
    std::fprintf(stderr, "bench step: %-16s %-5s B=%-4d n=%-7lld %10.2f us\n", op.c_str(), dtype, B, (long long)n, us);
  };
  const char* kLt = "cuBLASLt";
  const char* kOwn = "project kernel (cuda/)";
  const char* kHere = "timing kernel (bench/gpu)";

  // The gap between back-to-back kernels inside a graph: empty kernels, one block.
  add("graph_gap", "graph_gap", "-", kHere, 0, 0,
      graph_us([](cudaStream_t st, int) { empty_kernel<<<1, 32, 0, st>>>(); }, 200, o.iters, s));

  for (int B : o.batches) {
    // MoE routing on this GPU (core/decode_layer_ops.h): experts that get a token, and tokens per such expert.
    const ExpertLoad load = expert_load(m, B, o.ep);
    const int active = load.active, per_expert = load.tokens_per_expert;
    // One GEMM plan per projection and dtype at this batch (plans hold no device memory).
    std::vector<std::unique_ptr<LtGemm>> plan8, plan16;
    for (const Proj& p : projs) {
      plan8.push_back(std::make_unique<LtGemm>(lt, true, p.out, B, p.in));
      plan16.push_back(std::make_unique<LtGemm>(lt, false, p.out, B, p.in));
    }
    auto run8 = [&](const char* name, cudaStream_t st, int r) {
      const size_t i = widx(name);
      plan8[i]->run(w8[i].at(r), x8.as(), y16.as(), ws.as(), st);
    };
    std::vector<double> op_us;  // the ops of one MoE layer (fp8 projections), summed against the layer graph
    // Dense projections, each alone, both dtypes.
    for (size_t i = 0; i < std::size(projs); ++i)
      for (bool fp8 : {true, false}) {
        const Weight& w = fp8 ? w8[i] : w16[i];
        const LtGemm& g = fp8 ? *plan8[i] : *plan16[i];
        const void* x = fp8 ? x8.as() : x16.as();
        const double us = graph_us([&](cudaStream_t st, int r) { g.run(w.at(r), x, y16.as(), ws.as(), st); },
                                   o.reps, o.iters, s);
        add(projs[i].name, "gemm", fp8 ? "fp8" : "bf16", kLt, B, 0, us);
        const std::string name = projs[i].name;
        if (fp8 && name.rfind("dense_", 0) != 0) op_us.push_back(us);
      }
    // Absorbed w_kv_b: per head, q_nope -> latent (q side) and latent -> v (output side); bf16 strided batches.
    LtGemm uk(lt, false, S.kv_lora, B, S.nope, S.heads, int64_t(S.heads) * (S.nope + S.rope),
              int64_t(S.heads) * kMlaQkDim, int64_t(S.kv_lora) * S.nope, S.nope + S.rope, kMlaQkDim);
    LtGemm uv(lt, false, S.v, B, S.kv_lora, S.heads, int64_t(S.heads) * kMlaVDim, int64_t(S.heads) * S.v,
              int64_t(S.v) * S.kv_lora, kMlaVDim, S.v);
    auto uk_op = [&](cudaStream_t st, int) { uk.run(w_uk_heads.as(), x16.as(), att_q.as(), ws.as(), st); };
    auto uv_op = [&](cudaStream_t st, int) { uv.run(w_uv_heads.as(), att_out.as(), y16.as(), ws.as(), st); };
    const double uk_us = graph_us(uk_op, o.reps, o.iters, s);
    add("w_kv_b_q", "gemm", "bf16", kLt, B, 0, uk_us);
    const double uv_us = graph_us(uv_op, o.reps, o.iters, s);
    add("w_kv_b_o", "gemm", "bf16", kLt, B, 0, uv_us);
    op_us.push_back(uk_us);
    op_us.push_back(uv_us);
    // Routed experts of this GPU: gate_up, SiLU-and-multiply, down for each active expert (fp8 grouped GEMM as a
    // sequence of GEMMs in one graph).
    LtGemm e_gu(lt, true, 2 * S.inter, per_expert, S.h), e_dn(lt, true, S.h, per_expert, S.inter);
    auto experts_op = [&](cudaStream_t st, int) {
      for (int e = 0; e < active; ++e) {
        const uint8_t* we = experts.as<uint8_t>() + size_t(e) * 3 * S.inter * S.h;
        e_gu.run(we, moe_in8.as<uint8_t>() + size_t(e) * per_expert * S.h,
                 moe_gu.as<uint8_t>() + size_t(e) * per_expert * 2 * S.inter * 2, ws.as(), st);
      }
      silu_mul_kernel<<<grid_for(int64_t(active) * per_expert * S.inter), 256, 0, st>>>(
          moe_gu.as<__nv_bfloat16>(), z16.as<__nv_bfloat16>(), active * per_expert, S.inter);
      for (int e = 0; e < active; ++e) {
        const uint8_t* we = experts.as<uint8_t>() + size_t(e) * 3 * S.inter * S.h + size_t(2) * S.inter * S.h;
        e_dn.run(we, moe_act8.as<uint8_t>() + size_t(e) * per_expert * S.inter,
                 moe_out.as<uint8_t>() + size_t(e) * per_expert * S.h * 2, ws.as(), st);
      }
    };
    const double ex_us = graph_us(experts_op, std::max(1, o.reps / 4), o.iters, s);
    add("moe_experts", "grouped_gemm", "fp8", kLt, B, 0, ex_us);
    op_us.push_back(ex_us);
    // Norms (hidden twice per layer, q and kv latents once), RoPE of q, SiLU-and-multiply of the shared expert.
    auto norm_op = [&](int cols) {
      return [&, cols](cudaStream_t st, int) {
        rmsnorm_kernel<<<B, 256, 0, st>>>(x16.as<__nv_bfloat16>(), norm_w.as<__nv_bfloat16>(), cols);
      };
    };
    for (auto [name, cols, times] : {std::tuple{"rmsnorm_hidden", S.h, 2}, std::tuple{"rmsnorm_q", S.q_lora, 1},
                                     std::tuple{"rmsnorm_kv", S.kv_lora, 1}}) {
      const double us = graph_us(norm_op(cols), o.reps, o.iters, s);
      add(name, "elementwise", "bf16", kHere, B, 0, us);
      for (int t = 0; t < times; ++t) op_us.push_back(us);
    }
    auto rope_op = [&](cudaStream_t st, int) {
      rope_kernel<<<grid_for(int64_t(B) * S.heads * S.rope / 2), 256, 0, st>>>(
          x16.as<__nv_bfloat16>(), B, S.heads, S.heads * (S.nope + S.rope), S.nope + S.rope, S.nope, S.rope);
    };
    const double rope_us = graph_us(rope_op, o.reps, o.iters, s);
    add("rope_q", "elementwise", "bf16", kHere, B, 0, rope_us);
    op_us.push_back(rope_us);
    auto silu_op = [&](cudaStream_t st, int) {
      silu_mul_kernel<<<grid_for(int64_t(B) * S.inter), 256, 0, st>>>(y16.as<__nv_bfloat16>(), z16.as<__nv_bfloat16>(),
                                                                        B, S.inter);
    };
    const double silu_us = graph_us(silu_op, o.reps, o.iters, s);
    add("silu_mul_shared", "elementwise", "bf16", kHere, B, 0, silu_us);
    op_us.push_back(silu_us);
    // Sparse attention over K selected rows (independent of the context length).
    SparseAttentionArgs aa;
    aa.tokens = B;
    aa.heads = S.heads;
    aa.top_k = S.top_k;
    aa.slots = slots;
    aa.sm_scale = 1.0f / std::sqrt(float(S.nope + S.rope));
    aa.q = att_q.as<num::Bf16Bits>();
    aa.kv = kv.as<num::Bf16Bits>();
    aa.indices = att_idx.as<int32_t>();
    aa.out = att_out.as<num::Bf16Bits>();
    aa.lse = att_lse.as<float>();
    const bool have_fast = std::string(fast_attention_variant()) == "wgmma";
    const AttentionKernel layer_kernel = have_fast ? AttentionKernel::kFast : AttentionKernel::kExact;
    for (AttentionKernel kern : {AttentionKernel::kFast, AttentionKernel::kExact}) {
      if (kern == AttentionKernel::kFast && !have_fast) continue;
      const double us = graph_us([&](cudaStream_t st, int) { sparse_attention_device(aa, kern, st); },
                                 std::max(1, o.reps / 4), o.iters, s);
      add(kern == AttentionKernel::kFast ? "attention_fast" : "attention_exact", "attention", "bf16", kOwn, B, 0, us);
      if (kern == layer_kernel) op_us.push_back(us);
    }
    for (int64_t n : o.contexts) {
      std::vector<int32_t> len(B, int32_t(n));
      HS_CUDA_CHECK(cudaMemcpy(d_len.as(), len.data(), len.size() * 4, cudaMemcpyHostToDevice));
      IndexerArgs ia;
      ia.tokens = B;
      ia.max_len = n;
      ia.q = x16.as<num::Bf16Bits>();
      ia.weights = idx_w.as<float>();
      ia.keys = keys.as<num::Bf16Bits>();
      ia.key_rows = key_rows;
      ia.key_start = d_key_start.as<int64_t>();
      ia.seq_len = d_len.as<int32_t>();
      ia.scores = scores.as<float>();
      // Fewer captured calls where one call is long (the graph stays well under a second).
      const int ireps = int(std::clamp<int64_t>((int64_t(1) << 24) / (int64_t(B) * n), 1, o.reps));
      auto idx_op = [&](cudaStream_t st, int) { indexer_scores_device(ia, st); };
      double idx8_us = 0;
      if (own_indexer) add("indexer", "indexer", "bf16", kOwn, B, n, graph_us(idx_op, ireps, o.iters, s));
      // The fp8 path (E4M3 q and keys, a scale per key row: the layout the deployed cache holds).
      IndexerArgs i8 = ia;
      i8.dtype = IndexerDtype::kFp8E4m3;
      i8.q_fp8 = x8.as<num::Fp8Bits>();
      i8.keys_fp8 = keys.as<num::Fp8Bits>();
      i8.key_scale = key_scale.as<float>();
      auto idx8_op = [&](cudaStream_t st, int) { indexer_scores_device(i8, st); };
      if (own_indexer) {
        idx8_us = graph_us(idx8_op, ireps, o.iters, s);
        add("indexer", "indexer", "fp8", kOwn, B, n, idx8_us);
      }
      TopkArgs ta;
      ta.rows = B;
      ta.stride = n;
      ta.k = int32_t(std::min<int64_t>(S.top_k, n));
      ta.scores = scores.as<float>();
      ta.length = d_len.as<int32_t>();
      ta.out = topk_out.as<int32_t>();
      Buf tws(topk_workspace_bytes(ta, o.kernels.topk));
      auto topk_op = [&](cudaStream_t st, int) { topk_device(ta, tws.as(), tws.bytes(), o.kernels.topk, st); };
      const double tk_us = graph_us(topk_op, ireps, o.iters, s);
      add(n > S.top_k ? "topk" : "topk_all", "topk", "fp32", kOwn, B, n, tk_us);

      // The whole MoE layer as one graph, in execution order, fp8 projections and indexer as deployed.
      auto layer = [&](cudaStream_t st, int r) {
        norm_op(S.h)(st, r);
        run8("q_a", st, r);
        norm_op(S.q_lora)(st, r);
        run8("q_b", st, r);
        run8("kv_a", st, r);
        norm_op(S.kv_lora)(st, r);
        rope_op(st, r);
        uk_op(st, r);
        run8("indexer_q", st, r);
        run8("indexer_k", st, r);
        run8("indexer_w", st, r);
        if (own_indexer) idx8_op(st, r);
        topk_op(st, r);
        sparse_attention_device(aa, layer_kernel, st);
        uv_op(st, r);
        run8("o_proj", st, r);
        norm_op(S.h)(st, r);
        run8("router", st, r);
        experts_op(st, r);
        run8("shared_gate_up", st, r);
        silu_op(st, r);
        run8("shared_down", st, r);
      };
      const double layer_us = graph_us(layer, std::max(1, ireps / 4), o.iters, s);
      double sum = idx8_us + tk_us;
      for (double u : op_us) sum += u;
      add("layer", "layer", "fp8", own_indexer ? "whole layer, one graph" : "whole layer without the indexer's scoring, one graph", B, n, layer_us);
      add("layer_sum_of_ops", "layer", "fp8", "sum of the ops above", B, n, sum);
    }
  }
  cublaslt().Destroy(lt);
  cudaStreamDestroy(s);
  return rows;
}

}  // namespace hisparse::bench
