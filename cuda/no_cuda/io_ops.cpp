// @brief CPU-only build: the layout-copy and DeltaKV launchers exist so callers link, and say there is no CUDA.
#include "core/error.h"
#include "cuda/io_ops.h"

namespace hisparse::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw_error("{}: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)", what);
}
}  // namespace

void layout_copy_device(const LayoutCopyView&, bool, StreamHandle) { no_cuda("cuda layout copy"); }
void layout_gather_host(const LayoutCopyView&) { no_cuda("cuda layout gather"); }
void layout_backup_host(const LayoutCopyView&) { no_cuda("cuda layout backup"); }
void deltakv_device(const DeltaKvArgs&, StreamHandle) { no_cuda("cuda deltakv"); }
void deltakv_host(const DeltaKvArgs&) { no_cuda("cuda deltakv"); }

}  // namespace hisparse::cuda
