// @brief The CPU reference's SwapInSession (core/swap_in_session.h): one cpu_ref policy object per (row,
// configuration), stepped in submit() in row order. Every online policy of cpu_ref/policies runs here, sglang-lru as
// cpu_ref::swap_in itself (the contract), so this session is what the CUDA session and the replay's counting fast path
// (sim/replay/lru_counter.h) are checked against. Offline policies (belady) need a request's future, which a session
// stepped one step at a time does not have: the constructor refuses them.
#pragma once

#include <memory>
#include <vector>

#include "core/swap_in_session.h"
#include "cpu_ref/policies/policy.h"

namespace hisparse::cpu_ref {

class CpuSwapInSession final : public SwapInSession {
 public:
  /// Throws hisparse::Error for an unknown or offline policy, a buffer size below top_k, or slots < 1.
  CpuSwapInSession(SwapInSessionShape shape, int32_t slots = 1);
  std::string name() const override { return "cpu"; }
  const SwapInSessionShape& shape() const override { return shape_; }
  int32_t slots() const override { return static_cast<int32_t>(slots_.size()); }
  SessionStaging staging(int32_t slot) override;
  /// Runs the step of every row and configuration at once (the session is synchronous).
  void submit(int32_t slot) override;
  void wait(int32_t /*slot*/) override {}
  const SessionRowCounts* counts(int32_t slot, size_t config) const override;
  size_t staging_bytes() const override;
  double backend_seconds() const override { return seconds_; }

 private:
  SwapInSessionShape shape_;
  std::vector<HostSessionSlot> slots_;
  std::vector<std::vector<std::unique_ptr<SwapInPolicy>>> states_;  // [config][row]
  SwapInScratch scratch_;
  SwapInPlan plan_;
  double seconds_ = 0;
};

}  // namespace hisparse::cpu_ref
