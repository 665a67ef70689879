// @brief CPU-only build: CudaBackend exists so callers link, and refuses to start.
#include "core/error.h"
#include "cuda/backend_cuda.h"

namespace hisparse::cuda {

struct CudaBackend::Scratch {};

CudaBackend::CudaBackend(const KernelConfig& kernels) : kernels_(kernels) {
  throw_error("the CUDA backend is not available: this build has no CUDA (configured without nvcc or with "
              "-DHISPARSE_CUDA=OFF)");
}
CudaBackend::~CudaBackend() = default;
void CudaBackend::swap_in(const SwapInBatchView&, SwapInBatchResult&) {}
void CudaBackend::gather(const RowCopyView&) {}
void CudaBackend::backup(const RowCopyView&) {}
void CudaBackend::sparse_attention(const SparseAttentionArgs&, AttentionVariant) {}
void CudaBackend::indexer_scores(const IndexerArgs&) {}
void CudaBackend::topk(const TopkArgs&) {}
void CudaBackend::layout_gather(const LayoutCopyView&) {}
void CudaBackend::layout_backup(const LayoutCopyView&) {}
void CudaBackend::deltakv_reconstruct(const DeltaKvArgs&) {}

}  // namespace hisparse::cuda
