// @brief Times the attention kernels and top-k with CUDA events (median of repetitions, after warm-up) on random
// inputs: a 64k-slot KV pool (75 MB, above L2) with random index rows, uniform random scores for top-k.
#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/numerics/bf16.h"
#include "core/numerics/sparse_attention_args.h"
#include "core/numerics/topk_args.h"
#include "bench/gpu/op_bench.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/detail/op_buffers.cuh"
#include "cuda/sparse_attention.h"
#include "cuda/topk.h"

namespace hisparse::bench {
using namespace hisparse::cuda;  // the kernels under test
namespace {

template <typename Launch>
double median_us(int iters, Launch launch, cudaStream_t stream = nullptr) {
  cudaEvent_t a, b;
  HS_CUDA_CHECK(cudaEventCreate(&a));
  HS_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    HS_CUDA_CHECK(cudaEventRecord(a, stream));
    launch();
    HS_CUDA_CHECK(cudaEventRecord(b, stream));
    HS_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    HS_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Uniform in [-1, 1) from the top 24 bits (own mapping, as everywhere in the project).
float u_pm1(std::mt19937_64& g) { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; }

}  // namespace

std::vector<OpBenchRow> bench_attention(const OpBenchOptions& opt) {
  struct Cfg {
    int tokens, heads, k;
  };
  const Cfg cfgs[] = {{64, 128, 2048}, {64, 64, 2048}, {1, 128, 2048}, {128, 128, 2048}};
  const int64_t slots = 65536;
  std::mt19937_64 g(opt.seed);
  std::vector<num::Bf16Bits> kv(size_t(slots) * kMlaQkDim);
  for (auto& v : kv) v = num::float_to_bf16(u_pm1(g));
  detail::OpDeviceArray<num::Bf16Bits> d_kv;
  d_kv.upload(kv.data(), kv.size());
  std::vector<OpBenchRow> rows;
  for (const Cfg& c : cfgs) {
    std::vector<num::Bf16Bits> q(size_t(c.tokens) * c.heads * kMlaQkDim);
    for (auto& v : q) v = num::float_to_bf16(u_pm1(g));
    std::vector<int32_t> idx(size_t(c.tokens) * c.k);
    for (auto& v : idx) v = int32_t(g() % uint64_t(slots));
    detail::OpDeviceArray<num::Bf16Bits> d_q, d_out;
    detail::OpDeviceArray<int32_t> d_idx;
    detail::OpDeviceArray<float> d_lse;
    SparseAttentionArgs a;
    a.tokens = c.tokens;
    a.heads = c.heads;
    a.top_k = c.k;
    a.slots = slots;
    a.sm_scale = 1.0f / 24.0f;
    a.q = d_q.upload(q.data(), q.size());
    a.kv = d_kv.get();
    a.indices = d_idx.upload(idx.data(), idx.size());
    d_out.resize(size_t(c.tokens) * c.heads * kMlaVDim);
    d_lse.resize(size_t(c.tokens) * c.heads);
    a.out = d_out.get();
    a.lse = d_lse.get();
    const double flops = sparse_attention_flops(c.tokens, c.heads, c.k);
    for (AttentionKernel kern : {AttentionKernel::kFast, AttentionKernel::kExact}) {
      const double us = median_us(opt.iters, [&] { sparse_attention_device(a, kern, nullptr); });
      OpBenchRow r;
      r.op = "attention";
      r.config = fmt::format("batch {} heads {} K {}", c.tokens, c.heads, c.k);
      r.kernel = attention_kernel_name(kern);
      r.median_us = us;
      r.tflops = flops / (us * 1e-6) / 1e12;
      if (c.tokens == 64 && c.heads == 128) {
        const double target = kern == AttentionKernel::kFast ? 200.0 : 25.0;
        r.target = fmt::format(">= {:.0f} TFLOP/s", target);
        r.verdict = r.tflops >= target ? "met" : "MISSED";
      }
      rows.push_back(r);
    }
  }
  return rows;
}

std::vector<OpBenchRow> bench_topk(const OpBenchOptions& opt) {
  const int64_t n = 131072;
  const int k = 2048;
  std::mt19937_64 g(opt.seed + 7);
  std::vector<OpBenchRow> rows;
  for (int batch : {1, 64}) {
    std::vector<float> s(size_t(batch) * n);
    for (auto& v : s) v = u_pm1(g);
    std::vector<int32_t> len(static_cast<size_t>(batch), static_cast<int32_t>(n));
    detail::OpDeviceArray<float> d_s;
    detail::OpDeviceArray<int32_t> d_len, d_out;
    TopkArgs a;
    a.rows = batch;
    a.stride = n;
    a.k = k;
    a.scores = d_s.upload(s.data(), s.size());
    a.length = d_len.upload(len.data(), len.size());
    d_out.resize(size_t(batch) * k);
    a.out = d_out.get();
    detail::OpDeviceArray<unsigned char> ws(topk_workspace_bytes(a, opt.kernels.topk));
    const double us = median_us(opt.iters, [&] { topk_device(a, ws.get(), ws.size(), opt.kernels.topk, nullptr); });
    // The split in use (HISPARSE_TOPK_* knobs, see cuda/topk.cu) is part of the configuration of a sweep.
    const std::string cfg = fmt::format("batch {} top {} of {} G={}", batch, k, n, topk_blocks_per_row(a, opt.kernels.topk));
    OpBenchRow r;
    r.op = "topk";
    r.config = cfg;
    r.kernel = "radix";  // per call: an event pair around each call (the target applies here)
    r.median_us = us;
    r.per_row_us = us / batch;
    const double target = batch == 1 ? 40.0 : 100.0;
    r.target = fmt::format("<= {:.0f} us per call", target);
    r.verdict = us <= target ? "met" : "MISSED";
    rows.push_back(r);
    // The same calls replayed from a CUDA graph (as a decode step runs): no host launch cost between them.
    constexpr int kCalls = 20;
    cudaStream_t st;
    HS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    HS_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kCalls; ++i) topk_device(a, ws.get(), ws.size(), opt.kernels.topk, st);
    HS_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    HS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const double g_us = median_us(opt.iters, [&] { HS_CUDA_CHECK(cudaGraphLaunch(exec, st)); }, st) / kCalls;
    HS_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HS_CUDA_CHECK(cudaGraphDestroy(graph));
    HS_CUDA_CHECK(cudaStreamDestroy(st));
    OpBenchRow gr;
    gr.op = "topk";
    gr.config = cfg;
    gr.kernel = "graph";
    gr.median_us = g_us;
    gr.per_row_us = g_us / batch;
    rows.push_back(gr);
  }
  return rows;
}

}  // namespace hisparse::bench
