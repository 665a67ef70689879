// @brief CPU-only build: the attention, indexer and top-k launchers exist so callers link, and say there is no CUDA.
#include "core/error.h"
#include "cuda/indexer.h"
#include "cuda/sparse_attention.h"
#include "cuda/topk.h"

namespace hisparse::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw_error("{}: built without CUDA (configured without nvcc or with -DHISPARSE_CUDA=OFF)", what);
}
}  // namespace

const char* fast_attention_variant() { return "none (built without CUDA)"; }

const char* attention_kernel_name(AttentionKernel kernel) {
  return kernel == AttentionKernel::kExact ? "exact" : "fast";
}
void sparse_attention_device(const SparseAttentionArgs&, AttentionKernel, StreamHandle) {
  no_cuda("cuda sparse_attention");
}
void sparse_attention_host(const SparseAttentionArgs&, AttentionKernel) { no_cuda("cuda sparse_attention"); }
void indexer_scores_device(const IndexerArgs&, StreamHandle) { no_cuda("cuda indexer"); }
void indexer_scores_host(const IndexerArgs&) { no_cuda("cuda indexer"); }
size_t topk_workspace_bytes(const TopkArgs&, const TopkKernelConfig&) { no_cuda("cuda topk"); }
int topk_blocks_per_row(const TopkArgs&, const TopkKernelConfig&) { no_cuda("cuda topk"); }
void topk_device(const TopkArgs&, void*, size_t, const TopkKernelConfig&, StreamHandle) { no_cuda("cuda topk"); }
void topk_device(const TopkArgs&, const TopkKernelConfig&, StreamHandle) { no_cuda("cuda topk"); }
void topk_host(const TopkArgs&, const TopkKernelConfig&) { no_cuda("cuda topk"); }

}  // namespace hisparse::cuda
