// @brief CudaBackend: the Backend interface on the GPU; takes host views, uploads, launches, downloads.
#pragma once

#include <memory>

#include "core/backend.h"
#include "cuda/kernel_config.h"

namespace hisparse::cuda {

class CudaBackend final : public Backend {
 public:
  /// Throws hisparse::Error when the build has no CUDA or no device answers. `kernels` picks the kernel variants
  /// (every choice computes the same results).
  explicit CudaBackend(const KernelConfig& kernels = {});
  ~CudaBackend() override;
  std::string name() const override { return "cuda"; }
  const KernelConfig& kernel_config() const { return kernels_; }
  void swap_in(const SwapInBatchView& batch, SwapInBatchResult& out) override;
  void gather(const RowCopyView& rows) override;
  void backup(const RowCopyView& rows) override;
  /// These three allocate their device arrays per call (no shared scratch), so they are thread-safe.
  void sparse_attention(const SparseAttentionArgs& args, AttentionVariant variant) override;
  void indexer_scores(const IndexerArgs& args) override;
  void topk(const TopkArgs& args) override;
  void layout_gather(const LayoutCopyView& view) override;
  void layout_backup(const LayoutCopyView& view) override;
  void deltakv_reconstruct(const DeltaKvArgs& args) override;

  struct Scratch;  // device and pinned buffers reused across calls (defined in the .cu)

 private:
  KernelConfig kernels_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace hisparse::cuda
