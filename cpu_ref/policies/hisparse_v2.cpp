// @brief hisparse-v2: SGLang's HiSparse V2 swap-in (cpu_ref/swap_in_v2.h) as a replay policy. It leaves the common
// frame of policy.h on purpose: no fast path and no reserved newest slot (V2 serves every position at or past the
// evicted prefix from its own device page), and the buffer always starts empty (admit_request clears the slot map).
// The coordinator's admission decides the evicted prefix (core/hisparse_v2.h, v2_admitted_evicted_end): under the
// current rules a prefix shorter than the buffer runs as standard, everything resident. With a V2 session's schedule
// (use_v2_schedule) the admission, the evicted range (HiCache's leaf-first eviction under pressure) and the restarts
// of the buffer after a retraction come from it, step by step.
#include <vector>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/memory/hisparse_v2_session.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in_v2.h"

namespace hisparse::cpu_ref {
namespace {

class HisparseV2Policy final : public SwapInPolicy {
 public:
  HisparseV2Policy(int32_t page, V2Coordinator rules) : page_(page), rules_(rules) {}
  const char* name() const override { return "hisparse-v2"; }
  void do_reset(int32_t H, InitialState /*initial: V2 always starts empty*/) override {
    slot_pos_.assign(H, -1);
    evicted_end_ = -1;
    phase_ = -1;
  }
  void use_v2_schedule(std::shared_ptr<const V2Schedule> schedule) override { schedule_ = std::move(schedule); }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    // The evicted prefix is fixed by the request's first replayed step (its prompt, at admission); later steps
    // only add request-owned decode tokens.
    const auto H = static_cast<int32_t>(slot_pos_.size());
    if (schedule_) return scheduled_step(in, where, plan, scratch);
    const int32_t end = evicted_end_ >= 0 ? evicted_end_ : v2_admitted_evicted_end(in.n, page_, H, rules_);
    const SwapInV2Step step{in.selected, in.count, in.n, in.top_k, end, page_, in.host_loc, in.row_bytes};
    swap_in_v2({slot_pos_.data(), H}, step, where, plan, scratch);
    evicted_end_ = end;
  }
  /// A step under the session's phase for (request, n): a new phase that starts a fresh buffer (an admission after a
  /// retraction) empties it first.
  void scheduled_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) {
    int32_t index = -1;
    const V2Phase* p = schedule_->phase(where.request, in.n, &index);
    if (!p)
      throw_error("hisparse-v2: request {} at sequence length {} has no admission in the V2 session", where.request,
                  in.n);
    const bool restart = index != phase_ && p->fresh_buffer;
    std::vector<int32_t> kept;
    if (restart) {
      kept.swap(slot_pos_);
      slot_pos_.assign(kept.size(), -1);
    }
    const SwapInV2Step step{in.selected, in.count,    in.n,         in.top_k,        p->evicted_end,
                            page_,       in.host_loc, in.row_bytes, p->evicted_begin};
    try {
      swap_in_v2({slot_pos_.data(), static_cast<int32_t>(slot_pos_.size())}, step, where, plan, scratch);
    } catch (...) {
      if (restart) slot_pos_.swap(kept);  // invalid input leaves the state unchanged
      throw;
    }
    phase_ = index;
  }
  const int32_t* slot_token() const override { return slot_pos_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_pos_.size()); }

 private:
  int32_t page_;
  V2Coordinator rules_;
  int32_t evicted_end_ = -1;      // -1 until the first step
  std::shared_ptr<const V2Schedule> schedule_;
  int32_t phase_ = -1;            // the schedule's phase of the last step
  std::vector<int32_t> slot_pos_;  // [H]
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_hisparse_v2_policy(int32_t page, V2Coordinator rules) {
  return std::make_unique<HisparseV2Policy>(page, rules);
}

}  // namespace hisparse::cpu_ref
