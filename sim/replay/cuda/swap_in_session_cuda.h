// @brief The CUDA kernels' SwapInSession (core/swap_in_session.h): sglang-lru stepped by the project's swap-in kernels
// (cuda/replay_swap_in.h: plan only, no KV copies), one state set per buffer size resident on the device, a ring of
// pinned staging slots so that the host stages step s+1 while the GPU uploads and runs step s. Only the counters come
// back. The one part of sim/ that links cuda/ (target hisparse_replay_cuda).
#pragma once

#include <memory>
#include <vector>

#include "core/swap_in_session.h"

namespace hisparse::cuda {
class ReplaySwapIn;
}

namespace hisparse::sim {

class CudaSwapInSession final : public SwapInSession {
 public:
  /// Throws hisparse::Error when no GPU is usable (naming why), for a policy other than sglang-lru (the kernels
  /// implement that contract), or for slots outside 1..64.
  CudaSwapInSession(SwapInSessionShape shape, int32_t slots);
  ~CudaSwapInSession() override;
  std::string name() const override { return "cuda"; }
  const SwapInSessionShape& shape() const override { return shape_; }
  int32_t slots() const override { return slots_; }
  SessionStaging staging(int32_t slot) override;
  void submit(int32_t slot) override;
  /// Throws for the first rejected row (row order, then configuration order), naming request, layer and step.
  void wait(int32_t slot) override;
  const SessionRowCounts* counts(int32_t slot, size_t config) const override;
  size_t staging_bytes() const override;
  /// Seconds the swap-in kernels ran (CUDA events around each step's launches), summed.
  double backend_seconds() const override;

 private:
  struct Slot {
    std::vector<SessionRowInit> init;
    std::vector<int64_t> request, step;
    std::vector<int32_t> layer;
    std::vector<std::vector<SessionRowCounts>> counts;  // [config][row]
  };
  SwapInSessionShape shape_;
  int32_t slots_ = 0;
  std::unique_ptr<cuda::ReplaySwapIn> dev_;
  std::vector<Slot> host_;
};

}  // namespace hisparse::sim
