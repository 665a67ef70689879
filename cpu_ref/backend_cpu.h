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
};

}  // namespace hisparse::cpu_ref
