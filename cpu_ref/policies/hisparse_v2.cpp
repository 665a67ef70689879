// @brief hisparse-v2: SGLang's HiSparse V2 swap-in (cpu_ref/swap_in_v2.h) as a replay policy. It leaves the common
// frame of policy.h on purpose: no fast path and no reserved newest slot (V2 serves every position at or past the
// evicted prefix from its own device page), and the buffer always starts empty (admit_request clears the slot map).
#include <vector>

#include "core/hisparse_v2.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in_v2.h"

namespace hisparse::cpu_ref {
namespace {

class HisparseV2Policy final : public SwapInPolicy {
 public:
  explicit HisparseV2Policy(int32_t page) : page_(page) {}
  const char* name() const override { return "hisparse-v2"; }
  void do_reset(int32_t H, InitialState /*initial: V2 always starts empty*/) override {
    slot_pos_.assign(H, -1);
    evicted_end_ = -1;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    // The evicted prefix is fixed by the request's first replayed step (its prompt); later steps only add
    // request-owned decode tokens.
    const int32_t end = evicted_end_ >= 0 ? evicted_end_ : v2_evicted_end(in.n, page_);
    const SwapInV2Step step{in.selected, in.count, in.n, in.top_k, end, page_, in.host_loc, in.row_bytes};
    swap_in_v2({slot_pos_.data(), static_cast<int32_t>(slot_pos_.size())}, step, where, plan, scratch);
    evicted_end_ = end;
  }
  const int32_t* slot_token() const override { return slot_pos_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_pos_.size()); }

 private:
  int32_t page_;
  int32_t evicted_end_ = -1;      // -1 until the first step
  std::vector<int32_t> slot_pos_;  // [H]
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_hisparse_v2_policy(int32_t page) {
  return std::make_unique<HisparseV2Policy>(page);
}

}  // namespace hisparse::cpu_ref
