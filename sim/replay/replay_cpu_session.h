// @brief The CPU's fast SwapInSession (core/swap_in_session.h): sglang-lru in its counting form
// (sim/replay/lru_counter.h: the contract's counters without its plan; positions of a row's list marked once for every
// buffer size), the other policies as their cpu_ref/policies objects; rows split over host threads. Same counters as
// cpu_ref::CpuSwapInSession, the reference it is tested against (tests/sim/replay/test_replay_driver.cpp).
// Offline policies (belady) step here too: the driver's look-ahead stage stages each row's future with the step where
// a window of its request starts (SessionStaging::futures), and the session hands it to the policy before that step.
#pragma once

#include <memory>
#include <vector>

#include "core/swap_in_session.h"
#include "cpu_ref/memory/hisparse_v2_session.h"
#include "cpu_ref/policies/policy.h"
#include "sim/replay/lru_counter.h"
#include "sim/replay/replay_cuda_pool.h"

namespace hisparse::sim {

class CountingSwapInSession final : public SwapInSession {
 public:
  /// `threads` (>= 1) host threads step the rows (the caller's included), each row through every step of a slot
  /// before the next row. `reference_lru`: sglang-lru through its cpu_ref policy object (the plan-producing
  /// reference) instead of the counting form, same counters. Throws hisparse::Error for an unknown policy, a buffer
  /// size below top_k, or slots or steps_per_slot < 1.
  CountingSwapInSession(SwapInSessionShape shape, int threads, int32_t slots = 1, int32_t steps_per_slot = 1,
                        bool reference_lru = false);
  std::string name() const override { return "cpu-counting"; }
  const SwapInSessionShape& shape() const override { return shape_; }
  int32_t slots() const override { return static_cast<int32_t>(slots_.size()); }
  int32_t steps_per_slot() const override { return steps_; }
  bool borrows_lists() const override { return true; }
  bool takes_futures() const override { return offline_; }
  SessionStaging staging(int32_t slot) override;
  /// Steps every row at once (synchronous); a rejected row throws the contract's message (the first in row order).
  void submit(int32_t slot) override;
  void wait(int32_t /*slot*/) override {}
  const SessionRowCounts* counts(int32_t slot, size_t config) const override;
  size_t staging_bytes() const override;
  double backend_seconds() const override { return seconds_; }
  /// hisparse-v2 configurations follow these V2 session schedules (cpu_ref/memory/hisparse_v2_session.h).
  void use_v2_schedules(const cpu_ref::V2Schedules& schedules);

 private:
  /// Per-thread working memory, reused for every row and step.
  struct Worker {
    cpu_ref::SwapInScratch scratch;
    SwapInPlan plan;
    replay_detail::StepMarks marks;
    std::vector<int32_t> ref_slot_token, ref_lru;
  };
  void step_row(Worker& w, HostSessionSlot& s, size_t i);  // i = step * rows + row

  SwapInSessionShape shape_;
  int32_t steps_ = 1;
  std::vector<HostSessionSlot> slots_;
  std::vector<int32_t> lru_index_;  // per configuration: its counting state, or -1 (a policy object)
  std::vector<int32_t> lru_H_;      // per counting state
  int32_t H_max_ = 0;
  bool offline_ = false;  // some configuration needs the future (its slots stage futures)
  std::vector<std::vector<replay_detail::LruTokens>> lru_;                   // [row][counting state]
  std::vector<std::vector<std::unique_ptr<cpu_ref::SwapInPolicy>>> policy_;  // [row][configuration]
  std::vector<Worker> workers_;
  replay_detail::ReplayTaskPool pool_;
  double seconds_ = 0;
};

}  // namespace hisparse::sim
