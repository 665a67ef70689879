// @brief ReplaySwapIn (see replay_swap_in.h): device-resident swap-in states of a replay batch, plan-only launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/replay_swap_in.h"
#include "cuda/runtime.h"

namespace hisparse::cuda {

namespace {

__global__ void init_rows_kernel(int32_t* slot_token, int32_t* lru, int32_t H, int64_t first, int64_t count,
                                 bool identity) {
  const int64_t total = count * H;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int32_t s = static_cast<int32_t>(i % H);
    const int64_t at = first * H + i;
    lru[at] = s;
    slot_token[at] = identity ? s : -1;
  }
}

}  // namespace

struct ReplaySwapIn::Impl {
  SwapInDeviceArgs a;
  int32_t* selected = nullptr;  // owned unless shared
  int32_t* seq_len = nullptr;
  bool owns_input = true;
  int32_t* pinned_selected = nullptr;  // pinned staging of the uploads
  int32_t* pinned_seq_len = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  double kernel_seconds = 0;
  bool timing = false;
};

ReplaySwapIn::ReplaySwapIn(int32_t rows, int32_t H, int32_t top_k)
    : impl_(std::make_unique<Impl>()), rows_(rows), H_(H), top_k_(top_k) {
  std::string why;
  if (!cuda_available(&why)) throw_error("replay --backend cuda: no usable GPU: {}", why);
  if (rows < 1 || H < 1 || top_k < 1 || top_k > H)
    throw_error("replay --backend cuda: {} rows of H {} at top_k {}: expected rows >= 1 and 1 <= top_k <= H", rows, H,
                top_k);
  check_swap_in_fits(H, top_k);
  Impl& m = *impl_;
  SwapInDeviceArgs& a = m.a;
  const size_t B = rows, K = top_k;
  a.batch = rows;
  a.H = H;
  a.top_k = top_k;
  a.row_bytes = 16;  // plan only: h2d_bytes is recomputed by the caller from misses
  HS_CUDA_CHECK(cudaMalloc(&a.slot_token, B * H * 4));
  HS_CUDA_CHECK(cudaMalloc(&a.lru, B * H * 4));
  HS_CUDA_CHECK(cudaMalloc(&m.selected, B * K * 4));
  HS_CUDA_CHECK(cudaMalloc(&m.seq_len, B * 4));
  HS_CUDA_CHECK(cudaMalloc(&a.slot_of, B * K * 4 + 16));
  HS_CUDA_CHECK(cudaMalloc(&a.load_count, B * 4));
  HS_CUDA_CHECK(cudaMalloc(&a.load_host, B * K * 8 + 16));
  HS_CUDA_CHECK(cudaMalloc(&a.load_slot, B * K * 4 + 16));
  HS_CUDA_CHECK(cudaMalloc(&a.counters, B * kCounterWords * 8));
  HS_CUDA_CHECK(cudaMalloc(&a.error, B * 8));
  HS_CUDA_CHECK(cudaHostAlloc(&m.pinned_selected, B * K * 4, cudaHostAllocDefault));
  HS_CUDA_CHECK(cudaHostAlloc(&m.pinned_seq_len, B * 4, cudaHostAllocDefault));
  HS_CUDA_CHECK(cudaEventCreate(&m.start));
  HS_CUDA_CHECK(cudaEventCreate(&m.stop));
  a.selected = m.selected;
  a.seq_len = m.seq_len;
  a.host_loc = nullptr;  // token t at host row t
  a.host_pool = nullptr;  // plan only: no copies
  a.device_kv = nullptr;
}

ReplaySwapIn::~ReplaySwapIn() {
  Impl& m = *impl_;
  cudaFree(m.a.slot_token);
  cudaFree(m.a.lru);
  if (m.owns_input) {
    cudaFree(m.selected);
    cudaFree(m.seq_len);
  }
  cudaFree(m.a.slot_of);
  cudaFree(m.a.load_count);
  cudaFree(m.a.load_host);
  cudaFree(m.a.load_slot);
  cudaFree(m.a.counters);
  cudaFree(m.a.error);
  cudaFreeHost(m.pinned_selected);
  cudaFreeHost(m.pinned_seq_len);
  if (m.start) cudaEventDestroy(m.start);
  if (m.stop) cudaEventDestroy(m.stop);
}

void ReplaySwapIn::init_rows(int32_t first, int32_t count, InitialState state) {
  if (first < 0 || count < 0 || first + count > rows_)
    throw_error("replay --backend cuda: rows {}..{} outside the batch of {}", first, first + count, rows_);
  if (count == 0) return;
  const int64_t total = int64_t{count} * H_;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 65535));
  init_rows_kernel<<<blocks, 256>>>(impl_->a.slot_token, impl_->a.lru, H_, first, count,
                                    state == InitialState::kIdentity);
  HS_CUDA_CHECK_LAUNCH();
}

void ReplaySwapIn::upload(const int32_t* selected, const int32_t* seq_len) {
  Impl& m = *impl_;
  const size_t B = rows_, K = top_k_;
  std::memcpy(m.pinned_selected, selected, B * K * 4);
  std::memcpy(m.pinned_seq_len, seq_len, B * 4);
  HS_CUDA_CHECK(cudaMemcpyAsync(m.seq_len, m.pinned_seq_len, B * 4, cudaMemcpyHostToDevice));
  HS_CUDA_CHECK(cudaMemcpyAsync(m.selected, m.pinned_selected, B * K * 4, cudaMemcpyHostToDevice));
}

void ReplaySwapIn::share_input_of(const ReplaySwapIn& other) {
  if (other.rows_ != rows_ || other.top_k_ != top_k_)
    throw_error("replay --backend cuda: input shared between batches of {} and {} rows", rows_, other.rows_);
  Impl& m = *impl_;
  if (m.owns_input) {
    cudaFree(m.selected);
    cudaFree(m.seq_len);
  }
  m.owns_input = false;
  m.selected = other.impl_->selected;
  m.seq_len = other.impl_->seq_len;
  m.a.selected = m.selected;
  m.a.seq_len = m.seq_len;
}

void ReplaySwapIn::step() {
  Impl& m = *impl_;
  SwapInKernelConfig config;  // the default choice per batch size (cuda/kernel_config.h)
  HS_CUDA_CHECK(cudaEventRecord(m.start));
  swap_in_device(m.a, CopyMode::kFused, config, nullptr);
  HS_CUDA_CHECK(cudaEventRecord(m.stop));
  m.timing = true;
}

void ReplaySwapIn::collect(int64_t* counters, int32_t* errors) {
  Impl& m = *impl_;
  HS_CUDA_CHECK(cudaMemcpy(counters, m.a.counters, size_t(rows_) * kCounterWords * 8, cudaMemcpyDeviceToHost));
  HS_CUDA_CHECK(cudaMemcpy(errors, m.a.error, size_t(rows_) * 8, cudaMemcpyDeviceToHost));
  if (m.timing) {
    float ms = 0;
    HS_CUDA_CHECK(cudaEventElapsedTime(&ms, m.start, m.stop));
    m.kernel_seconds += ms / 1e3;
    m.timing = false;
  }
}

double ReplaySwapIn::kernel_seconds() const { return impl_->kernel_seconds; }

}  // namespace hisparse::cuda
