// @brief hisparse-v2: SGLang's HiSparse V2 swap-in (cpu_ref/swap_in_v2.h) as a replay policy. It leaves the common
// frame of policy.h on purpose: no fast path and no reserved newest slot (V2 serves every position at or past the
// evicted prefix from its own device page), and the buffer always starts empty (admit_request clears the slot map).
// The coordinator's admission decides the evicted prefix (core/hisparse_v2.h, v2_admitted_evicted_end): under the
// current rules a prefix shorter than the buffer runs as standard, everything resident.
#include <vector>

#include "core/hisparse_v2.h"
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
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    // The evicted prefix is fixed by the request's first replayed step (its prompt, at admission); later steps
    // only add request-owned decode tokens.
    const auto H = static_cast<int32_t>(slot_pos_.size());
    const int32_t end = evicted_end_ >= 0 ? evicted_end_ : v2_admitted_evicted_end(in.n, page_, H, rules_);
    const SwapInV2Step step{in.selected, in.count, in.n, in.top_k, end, page_, in.host_loc, in.row_bytes};
    swap_in_v2({slot_pos_.data(), H}, step, where, plan, scratch);
    evicted_end_ = end;
  }
  const int32_t* slot_token() const override { return slot_pos_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_pos_.size()); }

 private:
  int32_t page_;
  V2Coordinator rules_;
  int32_t evicted_end_ = -1;      // -1 until the first step
  std::vector<int32_t> slot_pos_;  // [H]
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_hisparse_v2_policy(int32_t page, V2Coordinator rules) {
  return std::make_unique<HisparseV2Policy>(page, rules);
}

}  // namespace hisparse::cpu_ref
