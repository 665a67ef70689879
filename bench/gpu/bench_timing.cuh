// @brief The timing harness shared by the GPU benchmarks of `hisparse bench` (copy_bench.cu, io_bench.cu): device
// arrays, the pinned mapped host pool, CUDA-event medians, CUDA-graph replays and the bulk-copy ceilings measured
// the same way. Inline functions, so the host pool and the bulk buffer exist once per process.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/gpu/copy_bench.h"
#include "cuda/detail/cuda_check.cuh"

namespace hisparse::bench::timing {

constexpr int64_t kRowBytes = 1152;          // bf16 (512 + 64) latent row
constexpr int64_t kPoolRows = 1 << 20;       // pinned host pool: 1 Mi rows = 1.2 GB, far beyond every cache
constexpr int32_t kLayers = 62;              // DeepSeek-V3.2: 61 layers + 1 MTP layer

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { HS_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T))); }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& v) { HS_CUDA_CHECK(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice)); }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// The pinned, mapped host pool every benchmark reads or writes (allocated once per process).
inline uint8_t* host_pool() {
  static uint8_t* pool = [] {
    void* p = nullptr;
    HS_CUDA_CHECK(cudaHostAlloc(&p, size_t(kPoolRows) * kRowBytes, cudaHostAllocMapped));
    auto* w = static_cast<uint64_t*>(p);
    for (size_t i = 0; i < size_t(kPoolRows) * kRowBytes / 8; ++i) w[i] = i * 0x9E3779B97F4A7C15ull;  // not zeros
    return static_cast<uint8_t*>(p);
  }();
  return pool;
}

class Events {
 public:
  Events() {
    HS_CUDA_CHECK(cudaEventCreate(&a_));
    HS_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~Events() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  void start(cudaStream_t s = nullptr) { HS_CUDA_CHECK(cudaEventRecord(a_, s)); }
  double stop_us(cudaStream_t s = nullptr) {
    HS_CUDA_CHECK(cudaEventRecord(b_, s));
    HS_CUDA_CHECK(cudaEventSynchronize(b_));
    float ms = 0;
    HS_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
    return double(ms) * 1e3;
  }

 private:
  cudaEvent_t a_{}, b_{};
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median over `iters` of one timed call; `prepare` runs (untimed) before each.
template <typename Prepare, typename Call>
double time_us(int iters, Prepare prepare, Call call) {
  Events ev;
  prepare();
  call();  // warm-up: module load, first-touch of the pool's mapping
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    prepare();
    ev.start();
    call();
    t.push_back(ev.stop_us());
  }
  HS_CUDA_CHECK(cudaGetLastError());
  return median(t);
}

/// The SGLang-class latency: `calls` launches back to back between two events (no host sync between them), the
/// per-call mean of each repeat, the median over `repeats`. The per-call method above adds an event pair and a
/// host round trip to every call, which on this class of host costs as much as the kernel.
template <typename Call>
double back_to_back_us(int calls, int repeats, Call call, cudaStream_t stream = nullptr) {
  Events ev;
  for (int i = 0; i < 3; ++i) call();
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    ev.start(stream);
    for (int i = 0; i < calls; ++i) call();
    t.push_back(ev.stop_us(stream) / calls);
  }
  HS_CUDA_CHECK(cudaGetLastError());
  return median(t);
}

/// Device side of the bulk-copy ceilings (grown on demand, kept for the process).
inline uint8_t* bulk_device_buffer(int64_t bytes) {
  static std::unique_ptr<DeviceArray<uint8_t>> dev;
  static size_t dev_bytes = 0;
  if (size_t(bytes) > dev_bytes) {
    dev.reset();
    dev = std::make_unique<DeviceArray<uint8_t>>(size_t(bytes));
    dev_bytes = size_t(bytes);
  }
  return dev->get();
}

inline void bulk_copy(int64_t bytes, bool to_device, cudaStream_t s) {
  uint8_t* d = bulk_device_buffer(bytes);
  uint8_t* h = host_pool();
  if (to_device)
    HS_CUDA_CHECK(cudaMemcpyAsync(d, h, size_t(bytes), cudaMemcpyHostToDevice, s));
  else
    HS_CUDA_CHECK(cudaMemcpyAsync(h, d, size_t(bytes), cudaMemcpyDeviceToHost, s));
}

/// Bulk pinned cudaMemcpy of `bytes` (the ceiling a row copy is measured against), GB/s, timed per call.
inline double bulk_gbps(int64_t bytes, bool to_device, int iters = 10) {
  bulk_device_buffer(bytes);
  const double us = time_us(iters, [] {}, [&] { bulk_copy(bytes, to_device, nullptr); });
  return double(bytes) / (us * 1e-6) / 1e9;
}

/// Per-call time of `calls` calls captured into one CUDA graph and replayed (how SGLang runs a decode step: no
/// host launch cost between the calls): graph time / calls, median over `repeats` replays after one warm-up.
template <typename Capture>
double graph_us(int calls, int repeats, Capture capture) {
  cudaStream_t st;
  HS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  HS_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) capture(st);
  HS_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
  HS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  HS_CUDA_CHECK(cudaGraphLaunch(exec, st));
  HS_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<double> t;
  {
    Events ev;
    for (int r = 0; r < repeats; ++r) {
      ev.start(st);
      HS_CUDA_CHECK(cudaGraphLaunch(exec, st));
      t.push_back(ev.stop_us(st) / calls);
    }
  }
  HS_CUDA_CHECK(cudaGraphExecDestroy(exec));
  HS_CUDA_CHECK(cudaGraphDestroy(graph));
  HS_CUDA_CHECK(cudaStreamDestroy(st));
  return median(t);
}

/// GPU time of `call` when every call needs `restore` first (a swap-in changes the state it reads): graphs of
/// (restore; call) pairs minus graphs of the restores alone, per call.
template <typename Restore, typename Call>
double graph_minus_restore_us(int repeats, Restore restore, Call call) {
  constexpr int kPairs = 16;
  const double pair = graph_us(kPairs, repeats, [&](cudaStream_t st) {
    restore(st);
    call(st);
  });
  const double alone = graph_us(kPairs, repeats, [&](cudaStream_t st) { restore(st); });
  return std::max(0.0, pair - alone);
}

/// Same-size bulk pinned cudaMemcpy replayed from a CUDA graph of `calls` copies (the ceiling of a graph-timed row
/// copy), GB/s. The buffers are made before the capture, which must not allocate.
inline double bulk_graph_gbps(int64_t bytes, bool to_device, int calls, int repeats) {
  bulk_device_buffer(bytes);
  host_pool();
  const double us = graph_us(calls, repeats, [&](cudaStream_t st) { bulk_copy(bytes, to_device, st); });
  return double(bytes) / (us * 1e-6) / 1e9;
}

/// Calls per graph for a copy of `bytes`: about 64 MiB per replay, 2 .. 64 calls.
inline int graph_calls(double bytes) { return int(std::clamp(double(64 << 20) / std::max(bytes, 1.0), 2.0, 64.0)); }

inline BenchRow make_row(std::string op, std::string config, std::string mode, double us, double bytes, double ceiling,
                  std::string target = "", double need_ratio = 0, double max_us = 0) {
  BenchRow r;
  r.op = std::move(op);
  r.config = std::move(config);
  r.mode = std::move(mode);
  r.median_us = us;
  r.bytes = bytes;
  r.gbps = bytes > 0 && us > 0 ? bytes / (us * 1e-6) / 1e9 : 0;
  r.ceiling_gbps = ceiling;
  r.target = std::move(target);
  if (need_ratio > 0) r.verdict = ceiling > 0 && r.gbps >= need_ratio * ceiling ? "ok" : "MISS";
  if (max_us > 0) r.verdict = us <= max_us ? "ok" : "MISS";
  return r;
}

inline uint64_t below(std::mt19937_64& g, uint64_t n) { return g() % n; }

}  // namespace hisparse::bench::timing
