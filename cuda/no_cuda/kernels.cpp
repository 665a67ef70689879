// @brief CPU-only build: the device launchers exist so callers link, and say the build has no CUDA.
#include "core/error.h"
#include "cuda/copy_rows.h"
#include "cuda/swap_in.h"

namespace hisparse::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw_error("{}: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)", what);
}
}  // namespace

void check_swap_in_fits(int32_t, int32_t) { no_cuda("cuda swap_in"); }
void swap_in_device(const SwapInDeviceArgs&, CopyMode, const SwapInKernelConfig&, StreamHandle) {
  no_cuda("cuda swap_in");
}
int swap_in_cluster_max_batch(const SwapInKernelConfig&) { return 0; }
void gather_device(const RowCopyDeviceArgs&, CopyMode, StreamHandle) { no_cuda("cuda gather"); }
void backup_device(const RowCopyDeviceArgs&, CopyMode, StreamHandle) { no_cuda("cuda backup"); }

}  // namespace hisparse::cuda
