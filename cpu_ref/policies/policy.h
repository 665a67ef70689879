// @brief SwapInPolicy: one buffer-management policy for one (request, layer), all reporting SwapInCounters.
//
// Fairness rules every policy follows (so curves of different policies can be drawn together):
//  - the same validation as the contract (cpu_ref::validate_and_mark): same errors for the same input;
//  - the same fast path: while n <= H every token sits in the slot of its number, nothing changes or loads;
//  - the same reserved slot H for the newest token n-1 (a "newest hit", never a load, never in the buffer);
//  - demand loading only: a load happens exactly for a valid, non-newest entry not resident in the H slots,
//    and it evicts a slot that the current step does not hit;
//  - the same initial states (identity, empty) at the first step, and the same host-copy check.
// They differ only in which non-hit slots receive the misses and in what they remember.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/swap_in_types.h"
#include "cpu_ref/policies/layer_future.h"
#include "cpu_ref/swap_in.h"

namespace hisparse::cpu_ref {

struct V2Schedule;  // cpu_ref/memory/hisparse_v2_session.h

/// One step's input (the same arguments as cpu_ref::swap_in).
struct StepInput {
  const int32_t* selected = nullptr;  // [count] positions, -1 = padding
  int32_t count = 0;                  // K' <= top_k
  int32_t n = 0;                      // sequence length; n-1 is the newest token
  int32_t top_k = 0;
  const int64_t* host_loc = nullptr;  // [n] host row per token, -1 = none; nullptr = token t at host row t
  int64_t row_bytes = 0;
};

class SwapInPolicy {
 public:
  virtual ~SwapInPolicy() = default;

  /// The registry name ("sglang-lru", "belady", ...).
  virtual const char* name() const = 0;

  /// Allocates H slots (plus the implicit reserved slot H) in the given initial state. An `empty` request whose
  /// first step has n <= H was admitted short and preloaded host->device (docs/swap_in.md), so it starts as
  /// `identity` instead; step() makes that switch on the first step.
  void reset(int32_t H, InitialState initial) {
    initial_ = initial;
    started_ = false;
    do_reset(H, initial);
  }

  /// True for offline policies, which must receive the layer's future (set_future) before the first step.
  virtual bool needs_future() const { return false; }

  /// Gives an offline policy the whole future of its (request, layer); steps then must follow it in order.
  virtual void set_future(std::shared_ptr<const LayerFuture> /*future*/) {}

  /// Runs one step; fills plan (slot_of, loads in miss order, counters). Throws hisparse::Error on invalid
  /// input with the policy's state unchanged.
  void step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) {
    if (started_) {
      do_step(in, where, plan, scratch);
      return;
    }
    const bool preload = initial_ == InitialState::kEmpty && in.n <= buffer_size();
    if (preload) do_reset(buffer_size(), InitialState::kIdentity);
    try {
      do_step(in, where, plan, scratch);
    } catch (...) {
      if (preload) do_reset(buffer_size(), InitialState::kEmpty);
      throw;
    }
    started_ = true;
  }

  /// hisparse-v2 only (a no-op for the others): take each request's admission, evicted range and buffer restarts
  /// from a V2 session over the whole trace (cpu_ref/memory/hisparse_v2_session.h) instead of the first step's prompt.
  virtual void use_v2_schedule(std::shared_ptr<const V2Schedule> /*schedule*/) {}

  /// [H] token held by each slot, -1 = empty (for tests and inspection).
  virtual const int32_t* slot_token() const = 0;
  virtual int32_t buffer_size() const = 0;

 protected:
  virtual void do_reset(int32_t H, InitialState initial) = 0;
  virtual void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) = 0;

 private:
  InitialState initial_ = InitialState::kIdentity;
  bool started_ = false;
};

}  // namespace hisparse::cpu_ref
