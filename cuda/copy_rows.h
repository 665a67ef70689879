// @brief Host-callable launchers of the scattered row copies (gather host→device, backup device→host).
#pragma once

#include <cstdint>

#include "cuda/swap_in.h"

namespace hisparse::cuda {

/// Rows are `row_bytes` (multiple of 16) long; host_pool is pinned mapped host memory, device_pool device memory,
/// host_row/device_row device (or mapped) arrays of `count` indices.
struct RowCopyDeviceArgs {
  int64_t count = 0;
  int64_t row_bytes = 0;
  const int64_t* host_row = nullptr;
  const int64_t* device_row = nullptr;
  uint8_t* host_pool = nullptr;
  uint8_t* device_pool = nullptr;
  // Copy-engine mode needs the index lists on the host; give them here (the device lists are then unused).
  const int64_t* host_row_on_host = nullptr;
  const int64_t* device_row_on_host = nullptr;
};

/// Zero-copy kernel for kFused/kSeparate (a warp per row, 16-byte accesses), cudaMemcpyAsync runs for kCopyEngine.
/// Asynchronous on `stream`.
void gather_device(const RowCopyDeviceArgs& args, CopyMode mode, StreamHandle stream = nullptr);
void backup_device(const RowCopyDeviceArgs& args, CopyMode mode, StreamHandle stream = nullptr);

}  // namespace hisparse::cuda
