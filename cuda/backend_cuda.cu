// @brief CudaBackend: host views in, device kernels run, results back; outputs are poisoned before each launch so
// an element the kernel forgot to write cannot match the reference by accident.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda/backend_cuda.h"
#include "cuda/copy_rows.h"
#include "cuda/detail/cuda_check.cuh"
#include "cuda/indexer.h"
#include "cuda/io_ops.h"
#include "cuda/runtime.h"
#include "cuda/sparse_attention.h"
#include "cuda/swap_in.h"
#include "cuda/topk.h"

namespace hisparse::cuda {
namespace {

/// A device allocation that only grows; reused across calls so validation does not spend its time in cudaMalloc.
class DeviceBuffer {
 public:
  ~DeviceBuffer() { cudaFree(ptr_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      HS_CUDA_CHECK(cudaFree(ptr_));
      ptr_ = nullptr;
      HS_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
      size_ = bytes;
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

/// Pinned, mapped host memory (kernels read it directly over PCIe); only grows.
class PinnedBuffer {
 public:
  ~PinnedBuffer() { cudaFreeHost(ptr_); }
  void* get(size_t bytes) {
    if (bytes > size_) {
      HS_CUDA_CHECK(cudaFreeHost(ptr_));
      ptr_ = nullptr;
      HS_CUDA_CHECK(cudaHostAlloc(&ptr_, bytes, cudaHostAllocMapped));
      size_ = bytes;
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
T* upload(DeviceBuffer& buf, const T* src, size_t count) {
  auto* d = static_cast<T*>(buf.get(count * sizeof(T) + 16));
  if (count) HS_CUDA_CHECK(cudaMemcpy(d, src, count * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
void download(T* dst, const T* src, size_t count) {
  if (count) HS_CUDA_CHECK(cudaMemcpy(dst, src, count * sizeof(T), cudaMemcpyDeviceToHost));
}

constexpr int kPoison = 0x5A;  // 0x5A5A5A5A: not a slot, not -1, not a plausible count

std::string error_text(int code) {
  switch (code) {
    case kSwapInOutOfRange: return "is out of range (expected -1 or 0 <= token < n)";
    case kSwapInDuplicate: return "appears twice in the selection";
    case kSwapInNoHostCopy: return "misses but has no host copy (host_loc = -1)";
    case kSwapInHostRowOutOfPool: return "misses and its host row lies outside the host pool";
    case kSwapInCorruptState: return "cannot be placed: more misses than evictable slots (corrupt state)";
    default: return "is invalid";
  }
}

}  // namespace

struct CudaBackend::Scratch {
  DeviceBuffer slot_token, lru, selected, seq_len, host_loc, slot_of, load_count, load_host, load_slot, counters,
      error, device_kv, host_row, device_row;
  PinnedBuffer host_pool;
};

CudaBackend::CudaBackend(const KernelConfig& kernels) : kernels_(kernels) {
  reject_retired_kernel_env();
  std::string why;
  if (!cuda_available(&why)) throw_error("the CUDA backend cannot start: {}", why);
  scratch_ = std::make_unique<Scratch>();
}

CudaBackend::~CudaBackend() = default;

void CudaBackend::swap_in(const SwapInBatchView& v, SwapInBatchResult& out) {
  check_swap_in_batch(v);
  check_swap_in_fits(v.H, v.top_k);
  Scratch& s = *scratch_;
  const size_t B = v.batch, H = v.H, K = v.top_k;
  out.slot_of.assign(B * K, -1);
  out.load_count.assign(B, 0);
  out.load_host.assign(B * K, -1);
  out.load_slot.assign(B * K, -1);
  out.counters.assign(B, SwapInCounters{});
  if (B == 0) return;

  SwapInDeviceArgs a;
  a.batch = v.batch;
  a.H = v.H;
  a.top_k = v.top_k;
  a.slot_token = upload(s.slot_token, v.slot_token, B * H);
  a.lru = upload(s.lru, v.lru, B * H);
  a.selected = upload(s.selected, v.selected, B * K);
  a.seq_len = upload(s.seq_len, v.seq_len, B);
  a.host_loc = v.host_loc ? upload(s.host_loc, v.host_loc, B * size_t(v.host_loc_stride)) : nullptr;
  a.host_loc_stride = v.host_loc_stride;
  a.row_bytes = v.row_bytes;
  a.slot_of = static_cast<int32_t*>(s.slot_of.get(B * K * 4 + 16));
  a.load_count = static_cast<int32_t*>(s.load_count.get(B * 4));
  a.load_host = static_cast<int64_t*>(s.load_host.get(B * K * 8 + 16));
  a.load_slot = static_cast<int32_t*>(s.load_slot.get(B * K * 4 + 16));
  a.counters = static_cast<int64_t*>(s.counters.get(B * kCounterWords * 8));
  a.error = static_cast<int32_t*>(s.error.get(B * 8));
  HS_CUDA_CHECK(cudaMemset(a.slot_of, kPoison, B * K * 4));
  HS_CUDA_CHECK(cudaMemset(a.load_count, kPoison, B * 4));
  HS_CUDA_CHECK(cudaMemset(a.load_host, kPoison, B * K * 8));
  HS_CUDA_CHECK(cudaMemset(a.load_slot, kPoison, B * K * 4));
  HS_CUDA_CHECK(cudaMemset(a.counters, kPoison, B * kCounterWords * 8));
  HS_CUDA_CHECK(cudaMemset(a.error, kPoison, B * 8));
  const size_t kv_bytes = B * (H + 1) * size_t(v.row_bytes);
  if (v.host_pool) {
    const size_t pool_bytes = size_t(v.host_rows) * size_t(v.row_bytes);
    auto* pinned = static_cast<uint8_t*>(s.host_pool.get(pool_bytes));
    std::memcpy(pinned, v.host_pool, pool_bytes);
    a.host_pool = pinned;  // unified addressing: the host pointer of mapped memory is valid on the device
    a.host_rows = v.host_rows;
    a.device_kv = upload(s.device_kv, v.device_kv, kv_bytes);
  }
  swap_in_device(a, copy_mode_, kernels_.swap_in, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<int32_t> err(B * 2);
  download(err.data(), a.error, B * 2);
  download(v.slot_token, a.slot_token, B * H);
  download(v.lru, a.lru, B * H);
  if (v.device_kv) download(v.device_kv, a.device_kv, kv_bytes);
  download(out.slot_of.data(), a.slot_of, B * K);
  download(out.load_count.data(), a.load_count, B);
  download(out.load_host.data(), a.load_host, B * K);
  download(out.load_slot.data(), a.load_slot, B * K);
  std::vector<int64_t> counters(B * kCounterWords);
  download(counters.data(), a.counters, B * kCounterWords);
  for (size_t b = 0; b < B; ++b) {
    const int64_t* c = &counters[b * kCounterWords];
    out.counters[b] = SwapInCounters{c[0], c[1], c[2], c[3], c[4], c[5] != 0};
  }
  for (size_t b = 0; b < B; ++b) {
    if (err[2 * b] == kSwapInOk) continue;
    const int entry = err[2 * b + 1];
    const int64_t request = v.request ? v.request[b] : int64_t(b);
    const int32_t layer = v.layer ? v.layer[b] : 0;
    if (err[2 * b] == kSwapInCorruptState)
      throw_error("cuda swap_in: request {}, layer {}, step {}: more misses than evictable slots; the buffer state "
                  "is corrupt (a token held by two slots?)", request, layer, v.step);
    if (entry < 0 || size_t(entry) >= K)
      throw_error("cuda swap_in: request {}, layer {}, step {}: the kernel reported error code {} (entry {})",
                  request, layer, v.step, err[2 * b], entry);
    throw_error("cuda swap_in: request {}, layer {}, step {}: entry {} = token {} {} (n = {})", request, layer,
                v.step, entry, v.selected[b * K + entry], error_text(err[2 * b]), v.seq_len[b]);
  }
}

namespace {
void row_copy(CudaBackend::Scratch&, const RowCopyView&, CopyMode, bool);
}

void CudaBackend::gather(const RowCopyView& r) {
  check_row_copy(r, "gather");
  row_copy(*scratch_, r, copy_mode_, true);
}

void CudaBackend::backup(const RowCopyView& r) {
  check_row_copy(r, "backup");
  row_copy(*scratch_, r, copy_mode_, false);
}

namespace {
void row_copy(CudaBackend::Scratch& s, const RowCopyView& r, CopyMode mode, bool to_device) {
  if (r.count == 0) return;
  const size_t host_bytes = size_t(r.host_rows) * size_t(r.row_bytes);
  const size_t dev_bytes = size_t(r.device_rows) * size_t(r.row_bytes);
  auto* pinned = static_cast<uint8_t*>(s.host_pool.get(host_bytes));
  std::memcpy(pinned, r.host_pool, host_bytes);
  RowCopyDeviceArgs a;
  a.count = r.count;
  a.row_bytes = r.row_bytes;
  a.host_row = upload(s.host_row, r.host_row, size_t(r.count));
  a.device_row = upload(s.device_row, r.device_row, size_t(r.count));
  a.host_row_on_host = r.host_row;
  a.device_row_on_host = r.device_row;
  a.host_pool = pinned;
  a.device_pool = upload(s.device_kv, r.device_pool, dev_bytes);
  if (to_device)
    gather_device(a, mode, nullptr);
  else
    backup_device(a, mode, nullptr);
  HS_CUDA_CHECK(cudaDeviceSynchronize());
  if (to_device)
    download(r.device_pool, a.device_pool, dev_bytes);
  else
    std::memcpy(r.host_pool, pinned, host_bytes);
}
}  // namespace

// The host entry points check, upload into per-call arrays, poison the outputs, run and download.
void CudaBackend::sparse_attention(const SparseAttentionArgs& args, AttentionVariant variant) {
  sparse_attention_host(args, variant == AttentionVariant::kExact ? AttentionKernel::kExact : AttentionKernel::kFast);
}

void CudaBackend::indexer_scores(const IndexerArgs& args) { indexer_scores_host(args); }

void CudaBackend::topk(const TopkArgs& args) { topk_host(args, kernels_.topk); }

void CudaBackend::layout_gather(const LayoutCopyView& view) { layout_gather_host(view); }
void CudaBackend::layout_backup(const LayoutCopyView& view) { layout_backup_host(view); }
void CudaBackend::deltakv_reconstruct(const DeltaKvArgs& args) { deltakv_host(args); }

}  // namespace hisparse::cuda
