// @brief belady: offline optimum per (request, layer). Each miss evicts the non-hit slot whose token is next
// used furthest in the layer's recorded future (never-used and empty slots first; ties: lowest slot). With
// demand loading and the shared fast path / reserved newest slot, no policy can have fewer misses.
// Needs set_future(build_layer_future(...)) before the first step; steps must then follow that future in order.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class BeladyPolicy final : public SwapInPolicy {
 public:
  const char* name() const override { return "belady"; }
  void do_reset(int32_t H, InitialState initial) override {
    initial_ = initial;
    slot_token_.resize(H);
    for (int32_t s = 0; s < H; ++s) slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
    slot_next_.assign(H, LayerFuture::kNever);
    candidates_.reserve(H);
    step_ = 0;
    seeded_ = false;
  }
  bool needs_future() const override { return true; }
  void set_future(std::shared_ptr<const LayerFuture> future) override {
    future_ = std::move(future);
    step_ = 0;
    seeded_ = false;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    if (!future_) {
      throw_error("belady: request {}, layer {}, step {}: no future given (set_future before the first step)",
                  where.request, where.layer, where.step);
    }
    const LayerFuture& f = *future_;
    if (f.H != H || step_ >= f.steps() || f.step_begin[step_ + 1] - f.step_begin[step_] != in.count) {
      throw_error("belady: request {}, layer {}, step {}: the step does not match its recorded future (H {} vs {}, "
                  "step {} of {})",
                  where.request, where.layer, where.step, H, f.H, step_, f.steps());
    }
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) {
      ++step_;
      return;
    }
    if (!seeded_) {
      // First slow-path step: the initial contents' next uses are their first uses.
      for (int32_t s = 0; s < H; ++s) slot_next_[s] = f.first_use_of(slot_token_[s]);
      seeded_ = true;
    }
    if (st.misses > 0) {
      candidates_.clear();
      for (int32_t s = 0; s < H; ++s) {
        if (scratch.slot_mark[s] != st.epoch) candidates_.push_back(s);
      }
      auto furthest = [this](int32_t a, int32_t b) {
        if (slot_next_[a] != slot_next_[b]) return slot_next_[a] > slot_next_[b];
        return a < b;
      };
      std::partial_sort(candidates_.begin(), candidates_.begin() + st.misses, candidates_.end(), furthest);
      std::copy(candidates_.begin(), candidates_.begin() + st.misses, scratch.victims.begin());
    }
    emit_loads(in, where, st, plan, scratch);
    commit_loads(slot_token_.data(), in, st, plan, scratch);
    // Every slot used now (hit or load) is next needed at the entry's next use.
    const int32_t* next = f.next_use.data() + f.step_begin[step_];
    const int32_t newest = in.n - 1;
    for (int32_t i = 0; i < in.count; ++i) {
      const int32_t s = plan.slot_of[i];
      if (s >= 0 && s < H) slot_next_[s] = next[i];
    }
    // A slot holding the newest token (n did not grow) is kept as a hit; its next use is the token's.
    for (int32_t h = 0; h < st.hit_slots; ++h) {
      const int32_t s = scratch.hits[h];
      if (slot_token_[s] == newest) {
        for (int32_t i = 0; i < in.count; ++i) {
          if (in.selected[i] == newest) slot_next_[s] = next[i];
        }
      }
    }
    ++step_;
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  InitialState initial_ = InitialState::kIdentity;
  std::shared_ptr<const LayerFuture> future_;
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<int32_t> slot_next_;   // [H] step of the next slot use of the slot's token (kNever: none)
  std::vector<int32_t> candidates_;  // [H] scratch: non-hit slots
  int64_t step_ = 0;                 // index of the next step in the future
  bool seeded_ = false;              // slot_next_ initialised from first uses
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_belady_policy() { return std::make_unique<BeladyPolicy>(); }

}  // namespace hisparse::cpu_ref
