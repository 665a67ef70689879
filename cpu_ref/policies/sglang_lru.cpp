// @brief sglang-lru: the swap-in contract itself (cpu_ref::swap_in), held as an owned state.
#include <vector>

#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class SglangLruPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "sglang-lru"; }
  void do_reset(int32_t H, InitialState initial) override {
    slot_token_.assign(H, -1);
    lru_.assign(H, 0);
    init_swap_in_state(view(), initial);
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    swap_in(view(), in.selected, in.count, in.n, in.top_k, in.host_loc, in.row_bytes, where, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  SwapInStateView view() { return {slot_token_.data(), lru_.data(), static_cast<int32_t>(slot_token_.size())}; }
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<int32_t> lru_;         // [H]
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_sglang_lru_policy() { return std::make_unique<SglangLruPolicy>(); }

}  // namespace hisparse::cpu_ref
