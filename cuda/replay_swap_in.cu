// @brief ReplaySwapIn (see replay_swap_in.h): device-resident swap-in states of a replay batch, plan-only launches,
// a ring of pinned staging slots uploaded on a copy stream while the compute stream runs the previous step.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/replay_swap_in.h"
#include "cuda/runtime.h"

namespace hisparse::cuda {

namespace {

/// One block per row; rows whose code is kReplayRowKeep return at once (only new requests' rows are reset).
__global__ void init_rows_kernel(int32_t* slot_token, int32_t* lru, int32_t H, const int8_t* init,
                                 const int32_t* seq_len) {
  const int64_t b = blockIdx.x;
  const int8_t code = init[b];
  if (code == kReplayRowKeep) return;
  const bool identity = code == kReplayRowIdentity || seq_len[b] <= H;
  for (int32_t s = threadIdx.x; s < H; s += blockDim.x) {
    lru[b * H + s] = s;
    slot_token[b * H + s] = identity ? s : -1;
  }
}

struct Slot {
  int32_t* host_selected = nullptr;  // pinned
  int32_t* host_seq_len = nullptr;
  int8_t* host_init = nullptr;
  int64_t* host_counters = nullptr;  // pinned [configs][rows][kCounterWords]
  int32_t* host_errors = nullptr;    // pinned [configs][rows][2]
  int32_t* selected = nullptr;       // device
  int32_t* seq_len = nullptr;
  int8_t* init = nullptr;
  cudaEvent_t uploaded = nullptr, done = nullptr, start = nullptr, stop = nullptr;
  bool in_flight = false;
};

}  // namespace

struct ReplaySwapIn::Impl {
  std::vector<SwapInDeviceArgs> a;  // per buffer size; selected/seq_len set per submit
  std::vector<Slot> slots;
  int64_t* counters = nullptr;      // device [configs][rows][kCounterWords]
  int32_t* errors = nullptr;        // device [configs][rows][2]
  cudaStream_t copy = nullptr, compute = nullptr;
  double kernel_seconds = 0;
  size_t staging_bytes = 0;

  void release() {
    // Destructor path: errors are not thrown from here (the process may be unwinding from one already).
    if (compute) cudaStreamSynchronize(compute);
    if (copy) cudaStreamSynchronize(copy);
    for (auto& x : a) {
      cudaFree(x.slot_token);
      cudaFree(x.lru);
      cudaFree(x.slot_of);
      cudaFree(x.load_count);
      cudaFree(x.load_host);
      cudaFree(x.load_slot);
    }
    for (auto& s : slots) {
      cudaFreeHost(s.host_selected);
      cudaFreeHost(s.host_seq_len);
      cudaFreeHost(s.host_init);
      cudaFreeHost(s.host_counters);
      cudaFreeHost(s.host_errors);
      cudaFree(s.selected);
      cudaFree(s.seq_len);
      cudaFree(s.init);
      for (cudaEvent_t e : {s.uploaded, s.done, s.start, s.stop})
        if (e) cudaEventDestroy(e);
    }
    cudaFree(counters);
    cudaFree(errors);
    if (copy) cudaStreamDestroy(copy);
    if (compute) cudaStreamDestroy(compute);
  }
};

ReplaySwapIn::ReplaySwapIn(int32_t rows, int32_t top_k, const std::vector<int32_t>& buffer_sizes, int32_t slots)
    : impl_(std::make_unique<Impl>()), rows_(rows), top_k_(top_k), slots_(slots) {
  std::string why;
  if (!cuda_available(&why)) throw_error("replay --backend cuda: no usable GPU: {}", why);
  if (rows < 1 || top_k < 1 || slots < 1 || buffer_sizes.empty())
    throw_error("replay --backend cuda: {} rows at top_k {}, {} slots, {} buffer sizes: expected each >= 1", rows,
                top_k, slots, buffer_sizes.size());
  for (int32_t H : buffer_sizes) {
    if (H < top_k) throw_error("replay --backend cuda: buffer size {} below top_k {}", H, top_k);
    check_swap_in_fits(H, top_k);
  }
  Impl& m = *impl_;
  try {
    const size_t B = rows, K = top_k, C = buffer_sizes.size();
    HS_CUDA_CHECK(cudaStreamCreateWithFlags(&m.copy, cudaStreamNonBlocking));
    HS_CUDA_CHECK(cudaStreamCreateWithFlags(&m.compute, cudaStreamNonBlocking));
    HS_CUDA_CHECK(cudaMalloc(&m.counters, C * B * kCounterWords * 8));
    HS_CUDA_CHECK(cudaMalloc(&m.errors, C * B * 8));
    for (size_t c = 0; c < C; ++c) {
      m.a.emplace_back();
      SwapInDeviceArgs& a = m.a.back();
      a.batch = rows;
      a.H = buffer_sizes[c];
      a.top_k = top_k;
      a.row_bytes = 16;  // plan only: h2d_bytes is recomputed by the caller from misses
      const size_t H = static_cast<size_t>(a.H);
      HS_CUDA_CHECK(cudaMalloc(&a.slot_token, B * H * 4));
      HS_CUDA_CHECK(cudaMalloc(&a.lru, B * H * 4));
      HS_CUDA_CHECK(cudaMalloc(&a.slot_of, B * K * 4 + 16));
      HS_CUDA_CHECK(cudaMalloc(&a.load_count, B * 4));
      HS_CUDA_CHECK(cudaMalloc(&a.load_host, B * K * 8 + 16));
      HS_CUDA_CHECK(cudaMalloc(&a.load_slot, B * K * 4 + 16));
      a.counters = m.counters + c * B * kCounterWords;
      a.error = m.errors + c * B * 2;
      a.host_loc = nullptr;   // token t at host row t
      a.host_pool = nullptr;  // plan only: no copies
      a.device_kv = nullptr;
    }
    m.slots.resize(static_cast<size_t>(slots));
    for (Slot& s : m.slots) {
      HS_CUDA_CHECK(cudaHostAlloc(&s.host_selected, B * K * 4, cudaHostAllocDefault));
      HS_CUDA_CHECK(cudaHostAlloc(&s.host_seq_len, B * 4, cudaHostAllocDefault));
      HS_CUDA_CHECK(cudaHostAlloc(&s.host_init, B, cudaHostAllocDefault));
      HS_CUDA_CHECK(cudaHostAlloc(&s.host_counters, C * B * kCounterWords * 8, cudaHostAllocDefault));
      HS_CUDA_CHECK(cudaHostAlloc(&s.host_errors, C * B * 8, cudaHostAllocDefault));
      HS_CUDA_CHECK(cudaMalloc(&s.selected, B * K * 4));
      HS_CUDA_CHECK(cudaMalloc(&s.seq_len, B * 4));
      HS_CUDA_CHECK(cudaMalloc(&s.init, B));
      HS_CUDA_CHECK(cudaEventCreateWithFlags(&s.uploaded, cudaEventDisableTiming));
      HS_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
      HS_CUDA_CHECK(cudaEventCreate(&s.start));
      HS_CUDA_CHECK(cudaEventCreate(&s.stop));
      m.staging_bytes += B * K * 4 + B * 4 + B;
    }
  } catch (...) {
    m.release();
    impl_.reset();
    throw;
  }
}

ReplaySwapIn::~ReplaySwapIn() {
  if (impl_) impl_->release();
}

int32_t* ReplaySwapIn::selected(int32_t slot) { return impl_->slots.at(static_cast<size_t>(slot)).host_selected; }
int32_t* ReplaySwapIn::seq_len(int32_t slot) { return impl_->slots.at(static_cast<size_t>(slot)).host_seq_len; }
int8_t* ReplaySwapIn::init(int32_t slot) { return impl_->slots.at(static_cast<size_t>(slot)).host_init; }

void ReplaySwapIn::submit(int32_t slot, bool any_init) {
  Impl& m = *impl_;
  Slot& s = m.slots.at(static_cast<size_t>(slot));
  if (s.in_flight) throw_error("replay --backend cuda: slot {} submitted twice without a wait", slot);
  const size_t B = rows_, K = top_k_, C = m.a.size();
  // The slot's device buffers are free: its previous step was waited for (done), which followed its kernels.
  HS_CUDA_CHECK(cudaMemcpyAsync(s.seq_len, s.host_seq_len, B * 4, cudaMemcpyHostToDevice, m.copy));
  HS_CUDA_CHECK(cudaMemcpyAsync(s.init, s.host_init, B, cudaMemcpyHostToDevice, m.copy));
  HS_CUDA_CHECK(cudaMemcpyAsync(s.selected, s.host_selected, B * K * 4, cudaMemcpyHostToDevice, m.copy));
  HS_CUDA_CHECK(cudaEventRecord(s.uploaded, m.copy));
  HS_CUDA_CHECK(cudaStreamWaitEvent(m.compute, s.uploaded, 0));
  HS_CUDA_CHECK(cudaEventRecord(s.start, m.compute));
  SwapInKernelConfig config;  // the default choice per batch size (cuda/kernel_config.h)
  for (SwapInDeviceArgs& a : m.a) {
    if (any_init) {
      init_rows_kernel<<<rows_, 256, 0, m.compute>>>(a.slot_token, a.lru, a.H, s.init, s.seq_len);
      HS_CUDA_CHECK_LAUNCH();
    }
    a.selected = s.selected;
    a.seq_len = s.seq_len;
    swap_in_device(a, CopyMode::kFused, config, m.compute);
  }
  HS_CUDA_CHECK(cudaEventRecord(s.stop, m.compute));
  HS_CUDA_CHECK(cudaMemcpyAsync(s.host_counters, m.counters, C * B * kCounterWords * 8, cudaMemcpyDeviceToHost,
                                m.compute));
  HS_CUDA_CHECK(cudaMemcpyAsync(s.host_errors, m.errors, C * B * 8, cudaMemcpyDeviceToHost, m.compute));
  HS_CUDA_CHECK(cudaEventRecord(s.done, m.compute));
  s.in_flight = true;
}

void ReplaySwapIn::wait(int32_t slot) {
  Impl& m = *impl_;
  Slot& s = m.slots.at(static_cast<size_t>(slot));
  if (!s.in_flight) return;
  HS_CUDA_CHECK(cudaEventSynchronize(s.done));
  float ms = 0;
  HS_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
  m.kernel_seconds += ms / 1e3;
  s.in_flight = false;
}

const int64_t* ReplaySwapIn::counters(int32_t slot, size_t config) const {
  return impl_->slots.at(static_cast<size_t>(slot)).host_counters + config * size_t(rows_) * kCounterWords;
}

const int32_t* ReplaySwapIn::errors(int32_t slot, size_t config) const {
  return impl_->slots.at(static_cast<size_t>(slot)).host_errors + config * size_t(rows_) * 2;
}

double ReplaySwapIn::kernel_seconds() const { return impl_->kernel_seconds; }

size_t ReplaySwapIn::staging_bytes() const { return impl_->staging_bytes; }

}  // namespace hisparse::cuda
