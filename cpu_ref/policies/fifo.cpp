// @brief fifo: misses evict the earliest-loaded slots that this step does not hit; hits do not reorder.
#include <vector>

#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class FifoPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "fifo"; }
  void do_reset(int32_t H, InitialState initial) override {
    slot_token_.resize(H);
    order_.resize(H);
    for (int32_t s = 0; s < H; ++s) {
      slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
      order_[s] = s;  // same starting order as the contract's LRU
    }
    next_order_.resize(H);
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) return;
    // Victims: the oldest loads not hit now; the rest keep their places, the new loads go to the back.
    int32_t nv = 0;
    int32_t kept = 0;
    for (int32_t j = 0; j < H; ++j) {
      const int32_t s = order_[j];
      if (nv < st.misses && scratch.slot_mark[s] != st.epoch) {
        scratch.victims[nv++] = s;
      } else {
        next_order_[kept++] = s;
      }
    }
    emit_loads(in, where, st, plan, scratch);
    for (int32_t m = 0; m < nv; ++m) next_order_[kept + m] = scratch.victims[m];
    order_.swap(next_order_);
    commit_loads(slot_token_.data(), in, st, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<int32_t> order_;       // [H] slots by load time, oldest first
  std::vector<int32_t> next_order_;  // [H] scratch for the new order
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_fifo_policy() { return std::make_unique<FifoPolicy>(); }

}  // namespace hisparse::cpu_ref
