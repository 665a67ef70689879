// @brief StepCost: where one decode step's time goes, one field per operation (ns), so plots can attribute time.
#pragma once

#include <cstdint>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// Critical-path time of one GPU in one step. indexer + topk + swap_in + h2d + attention + moe + stall + sync + draft
/// equals the step's length; `backup` runs on a copy engine beside the compute and is not part of that sum
/// (only a wait for it is, under `stall`), nor is `prefetch_hidden` (copy time the side stream hid).
struct StepCost {
  SimTime indexer = 0;    // lightning-indexer scoring over every token's indexer key
  SimTime topk = 0;       // top-k selection over the scores
  SimTime swap_in = 0;    // hit detection + LRU update kernel (HiSparse only)
  SimTime h2d = 0;        // exposed host→device copy of the misses (all of it in `none`, what compute did not hide in `two-batch`)
  SimTime attention = 0;  // MLA projections + sparse attention over the K selected rows
  SimTime moe = 0;        // MoE / dense MLP, expert all-to-all, LM head
  SimTime backup = 0;     // device→host copy of the newest token (copy engine; off the critical path)
  SimTime stall = 0;      // waiting for IO the step could not start without (the previous backup)
  SimTime sync = 0;       // waiting for the slowest data-parallel rank at the expert all-to-all
  SimTime draft = 0;      // MTP: the draft layer's d passes that propose the next step's tokens (sim/cost/step/speculative.h)
  SimTime prefetch_hidden = 0;  // IndexShare: the shared layers' copy hidden under compute by the side-stream
                                // prefetch after the anchor's top-k (off the critical path; SGLang #29637)

  SimTime critical_path() const { return indexer + topk + swap_in + h2d + attention + moe + stall + sync + draft; }
  StepCost& operator+=(const StepCost& o) {
    indexer += o.indexer; topk += o.topk; swap_in += o.swap_in; h2d += o.h2d; attention += o.attention;
    moe += o.moe; backup += o.backup; stall += o.stall; sync += o.sync; draft += o.draft;
    prefetch_hidden += o.prefetch_hidden;
    return *this;
  }
};

/// Field names in output order (JSON keys, CSV columns, plot legend).
inline constexpr const char* kStepCostFields[] = {"indexer", "topk", "swap_in", "h2d", "attention",
                                                  "moe", "backup", "stall", "sync", "draft", "prefetch_hidden"};
inline SimTime step_cost_field(const StepCost& c, int i) {
  const SimTime v[] = {c.indexer, c.topk, c.swap_in, c.h2d,  c.attention,
                       c.moe,     c.backup, c.stall, c.sync, c.draft,    c.prefetch_hidden};
  return v[i];
}
inline constexpr int kStepCostFieldCount = 11;

}  // namespace hisparse::sim
