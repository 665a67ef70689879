// @brief CpuBackend: the reference implementation of the Backend interface, built on cpu_ref::swap_in.
#pragma once

#include "core/backend.h"

namespace hisparse::cpu_ref {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  void swap_in(const SwapInBatchView& batch, SwapInBatchResult& out) override;
  void gather(const RowCopyView& rows) override;
  void backup(const RowCopyView& rows) override;
  /// Both variants run the bit-exact reference (there is no faster CPU path; see AttentionVariant).
  void sparse_attention(const SparseAttentionArgs& args, AttentionVariant variant) override;
  void indexer_scores(const IndexerArgs& args) override;
  void topk(const TopkArgs& args) override;
  void layout_gather(const LayoutCopyView& view) override;
  void layout_backup(const LayoutCopyView& view) override;
  void deltakv_reconstruct(const DeltaKvArgs& args) override;
};

}  // namespace hisparse::cpu_ref
