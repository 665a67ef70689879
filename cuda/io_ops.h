// @brief Host-callable launchers of the layout-aware host-pool copies (core/host_layout.h) and of the DeltaKV
// reconstruction (core/numerics/deltakv_args.h), bit exact with cpu_ref/.
#pragma once

#include "core/host_layout.h"
#include "core/numerics/deltakv_args.h"
#include "cuda/swap_in.h"  // StreamHandle

namespace hisparse::cuda {

/// Device view: host_pool is pinned mapped host memory (read or written over PCIe, zero-copy), device_pool device
/// memory, host_loc/device_loc device arrays. A warp per (token, layer): every head of the row, 16-byte accesses.
/// Asynchronous on `stream`; no checks (the host entry points check).
void layout_copy_device(const LayoutCopyView& view, bool to_device, StreamHandle stream = nullptr);
/// Host pointers: checks (check_layout_copy), copies into pinned and device buffers of this call, runs, copies back.
void layout_gather_host(const LayoutCopyView& view);
void layout_backup_host(const LayoutCopyView& view);

/// Device pointers; asynchronous. A block per compressed row, its reference indices staged in shared memory.
void deltakv_device(const DeltaKvArgs& args, StreamHandle stream = nullptr);
/// Host pointers: checks, uploads, poisons the output, runs, downloads.
void deltakv_host(const DeltaKvArgs& args);

}  // namespace hisparse::cuda
