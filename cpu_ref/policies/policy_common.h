// @brief The parts of one step that every policy shares with the contract (validation, fast path, reserved
// newest slot, hit detection, host-copy check, commit); a policy only chooses the victim slot of each miss.
#pragma once

#include <cstdint>

#include "cpu_ref/policies/policy.h"

namespace hisparse::cpu_ref {

/// What classify_step found on a slow-path step.
struct SlowStep {
  uint32_t epoch = 0;   // scratch.slot_mark[s] == epoch <=> slot s is hit at this step (must not be evicted)
  int32_t hit_slots = 0;   // slots hit (scratch.hits[0..hit_slots), ascending slot index)
  int32_t misses = 0;      // entries to load (scratch.miss_entry[0..misses), increasing entry index)
  int32_t evictable = 0;   // H - hit_slots
};

/// Validates, runs the fast path (returns false: plan complete, nothing to do) or classifies a slow-path step
/// (returns true): newest entries get slot H, entries whose token a slot holds get that slot, the rest are
/// misses. A slot holding the newest token itself (only when n did not grow) counts as hit, as in the contract.
bool classify_step(const int32_t* slot_token, int32_t H, const StepInput& in, const StepContext& where,
                   SwapInPlan& plan, SwapInScratch& scratch, SlowStep& out);

/// With scratch.victims[0..misses) chosen: checks every host copy (throws, nothing changed) and fills the
/// plan's loads and counters. Call before the policy changes any of its own state.
void emit_loads(const StepInput& in, const StepContext& where, const SlowStep& step, SwapInPlan& plan,
                const SwapInScratch& scratch);

/// Writes the loaded tokens into slot_token and their slots into plan.slot_of.
void commit_loads(int32_t* slot_token, const StepInput& in, const SlowStep& step, SwapInPlan& plan,
                  const SwapInScratch& scratch);

}  // namespace hisparse::cpu_ref
