// @brief lfu: misses evict the non-hit slots used least often since their load (ties: least recently used,
// then lowest slot); empty slots count as never used and go first.
#include <algorithm>
#include <vector>

#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class LfuPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "lfu"; }
  void do_reset(int32_t H, InitialState initial) override {
    slot_token_.resize(H);
    for (int32_t s = 0; s < H; ++s) slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
    uses_.assign(H, 0);
    last_use_.assign(H, -1);
    candidates_.reserve(H);
    clock_ = 0;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) return;
    if (st.misses > 0) {
      candidates_.clear();
      for (int32_t s = 0; s < H; ++s) {
        if (scratch.slot_mark[s] != st.epoch) candidates_.push_back(s);
      }
      auto colder = [this](int32_t a, int32_t b) {
        if (uses_[a] != uses_[b]) return uses_[a] < uses_[b];
        if (last_use_[a] != last_use_[b]) return last_use_[a] < last_use_[b];
        return a < b;
      };
      std::partial_sort(candidates_.begin(), candidates_.begin() + st.misses, candidates_.end(), colder);
      std::copy(candidates_.begin(), candidates_.begin() + st.misses, scratch.victims.begin());
    }
    emit_loads(in, where, st, plan, scratch);
    ++clock_;
    for (int32_t h = 0; h < st.hit_slots; ++h) {
      const int32_t s = scratch.hits[h];
      ++uses_[s];
      last_use_[s] = clock_;
    }
    for (int32_t m = 0; m < st.misses; ++m) {
      const int32_t s = scratch.victims[m];
      uses_[s] = 1;
      last_use_[s] = clock_;
    }
    commit_loads(slot_token_.data(), in, st, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<int64_t> uses_;        // [H] selections since the slot was loaded (0 = never used)
  std::vector<int64_t> last_use_;    // [H] slow-path step of the last use, -1 = never
  std::vector<int32_t> candidates_;  // [H] scratch: non-hit slots
  int64_t clock_ = 0;                // slow-path steps seen
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_lfu_policy() { return std::make_unique<LfuPolicy>(); }

}  // namespace hisparse::cpu_ref
