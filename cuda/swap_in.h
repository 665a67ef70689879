// @brief Host-callable launchers of the batched swap-in kernel on DEVICE pointers (no CUDA headers here).
// The Backend wrapper (cuda/backend_cuda.h) and the benchmarks (bench/gpu/copy_bench.h) call these.
#pragma once

#include <cstdint>

#include "core/backend.h"
#include "cuda/kernel_config.h"

namespace hisparse::cuda {

/// Opaque cudaStream_t, so that .cpp callers need no CUDA header; nullptr = the default stream.
using StreamHandle = void*;

/// Error codes a row can report (error[b*2] = code, error[b*2+1] = entry index); 0 = fine.
enum SwapInErrorCode : int32_t {
  kSwapInOk = 0,
  kSwapInOutOfRange = 1,  // entry < -1 or >= n
  kSwapInDuplicate = 2,   // the same token twice in one row
  kSwapInNoHostCopy = 3,  // a miss whose host_loc is -1
  kSwapInHostRowOutOfPool = 4,  // a miss whose host row lies outside the host pool (copy requested)
  kSwapInCorruptState = 5,      // more misses than evictable slots (a token held by two slots)
};

/// Every pointer is a device pointer except host_pool, which is pinned mapped host memory (zero-copy reads).
struct SwapInDeviceArgs {
  int32_t batch = 0, H = 0, top_k = 0;
  int32_t* slot_token = nullptr;      // [B][H]
  int32_t* lru = nullptr;             // [B][H]
  const int32_t* selected = nullptr;  // [B][K]
  const int32_t* seq_len = nullptr;   // [B]
  const int64_t* host_loc = nullptr;  // [B][host_loc_stride] or nullptr (token t at host row t)
  int64_t host_loc_stride = 0;
  int64_t row_bytes = 0;
  int32_t* slot_of = nullptr;         // [B][K] out
  int32_t* load_count = nullptr;      // [B] out
  int64_t* load_host = nullptr;       // [B][K] out
  int32_t* load_slot = nullptr;       // [B][K] out
  int64_t* counters = nullptr;        // [B][kCounterWords] out: selected, hits, newest_hits, misses, h2d_bytes, fast
  int32_t* error = nullptr;           // [B][2] out
  const uint8_t* host_pool = nullptr; // mapped pinned host pool, nullptr = plan only
  int64_t host_rows = 0;
  uint8_t* device_kv = nullptr;       // [B][H+1][row_bytes] device
};
constexpr int kCounterWords = 6;

/// Throws unless the one-block-per-row kernel fits H and top_k in this device's shared memory. That kernel is the
/// fallback of every launch, so a shape that passes always runs: the cluster kernel shrinks its larger hash table,
/// then falls back to the one-block kernel, where its own layout does not fit.
void check_swap_in_fits(int32_t H, int32_t top_k);

/// Launches the swap-in (and, per mode, the copy of its misses). Asynchronous on `stream` except kCopyEngine,
/// which waits for the plan to read the load lists back and then queues cudaMemcpyAsync per row.
/// `config` picks the kernel for this batch size (cuda/kernel_config.h); every choice computes the same bits.
void swap_in_device(const SwapInDeviceArgs& args, CopyMode mode, const SwapInKernelConfig& config,
                    StreamHandle stream = nullptr);

/// Largest batch the thread-block-cluster swap-in kernel takes under `config` (larger ones run the one-block-per-row
/// kernel; 0 = no cluster kernel). The two kernels' costs differ by a step, so the calibration fits them separately.
int swap_in_cluster_max_batch(const SwapInKernelConfig& config);

}  // namespace hisparse::cuda
