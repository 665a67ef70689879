// @brief clock (second chance): a hand sweeps slots 0..H-1; a set reference bit buys one more lap. Hits and
// loads set the bit; slots hit at this step are never taken.
#include <vector>

#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class ClockPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "clock"; }
  void do_reset(int32_t H, InitialState initial) override {
    slot_token_.resize(H);
    for (int32_t s = 0; s < H; ++s) slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
    referenced_.assign(H, 0);
    touched_.assign(H, 0);
    cleared_.reserve(H);
    hand_ = 0;
    sweep_ = 0;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) return;
    // Dry run first (bits cleared and slots taken are only recorded), so an error leaves the state unchanged.
    // touched_[s] == sweep_: the bit of s was cleared in this sweep (2) or s was taken (1 + 2 = 3).
    ++sweep_;
    cleared_.clear();
    int32_t hand = hand_;
    for (int32_t m = 0; m < st.misses;) {
      const int32_t s = hand;
      hand = hand + 1 == H ? 0 : hand + 1;
      if (scratch.slot_mark[s] == st.epoch || touched_[s] == taken_tag()) continue;
      if (referenced_[s] && touched_[s] != cleared_tag()) {
        touched_[s] = cleared_tag();
        cleared_.push_back(s);
        continue;
      }
      touched_[s] = taken_tag();
      scratch.victims[m++] = s;
    }
    emit_loads(in, where, st, plan, scratch);
    hand_ = hand;
    for (int32_t s : cleared_) referenced_[s] = 0;
    for (int32_t h = 0; h < st.hit_slots; ++h) referenced_[scratch.hits[h]] = 1;
    for (int32_t m = 0; m < st.misses; ++m) referenced_[scratch.victims[m]] = 1;
    commit_loads(slot_token_.data(), in, st, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  uint64_t cleared_tag() const { return 2 * sweep_; }
  uint64_t taken_tag() const { return 2 * sweep_ + 1; }
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<uint8_t> referenced_;  // [H] reference bit
  std::vector<uint64_t> touched_;    // [H] what the current sweep did to the slot (tags above)
  std::vector<int32_t> cleared_;     // slots whose bit the current sweep cleared
  int32_t hand_ = 0;                 // next slot the hand looks at
  uint64_t sweep_ = 0;               // one per slow-path step with misses
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_clock_policy() { return std::make_unique<ClockPolicy>(); }

}  // namespace hisparse::cpu_ref
