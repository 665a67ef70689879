// @brief topk-only: after each slow-path step the buffer holds exactly that step's selection (newest token
// aside, it lives in the reserved slot); everything else is dropped, so no history older than one step helps.
// The first slow-path step starts from the same initial state as the contract. Misses take the lowest-numbered
// slots not hit at this step.
#include <vector>

#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class TopkOnlyPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "topk-only"; }
  void do_reset(int32_t H, InitialState initial) override {
    slot_token_.resize(H);
    for (int32_t s = 0; s < H; ++s) slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) return;
    int32_t nv = 0;
    for (int32_t s = 0; s < H && nv < st.misses; ++s) {
      if (scratch.slot_mark[s] != st.epoch) scratch.victims[nv++] = s;
    }
    emit_loads(in, where, st, plan, scratch);
    // Drop every slot this step did not hit; the loads are written right after.
    for (int32_t s = 0; s < H; ++s) {
      if (scratch.slot_mark[s] != st.epoch) slot_token_[s] = -1;
    }
    commit_loads(slot_token_.data(), in, st, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  std::vector<int32_t> slot_token_;  // [H]
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_topk_only_policy() { return std::make_unique<TopkOnlyPolicy>(); }

}  // namespace hisparse::cpu_ref
