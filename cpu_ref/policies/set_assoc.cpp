// @brief set-assoc: the hot buffer split into LRU shards (SGLang #31341's design: 256 shards x 32 ways), each token
// hashed to one shard; a miss evicts the least recently used way of its shard that this step does not hit.
//
// Ours, where the public description stops (docs/swap_in.md, "Policies"):
//  - hash: shard(t) = ((uint32(t) * 2654435761) mod 2^32) * S >> 32 (Knuth's multiplicative hash, then a
//    multiply-shift range reduction, so S need not be a power of two);
//  - ways s*W .. s*W+W-1 form shard s; recency within a shard is the contract's order (slot order at the start;
//    after a step its loads in miss order, then its hits in their previous order), kept as a per-slot stamp, so one
//    shard (set-assoc:1xH) is exactly sglang-lru;
//  - a hit is found in any slot (only the identity start and overflow place a token outside its home shard);
//  - overflow: a miss whose home shard has no way left to evict this step takes one from the next shard, (s+1) mod S,
//    and so on, so every miss is served as under every other policy.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/policies/policy_common.h"
#include "cpu_ref/policies/registry.h"

namespace hisparse::cpu_ref {
namespace {

class SetAssocPolicy final : public SwapInPolicy {
 public:
  SetAssocPolicy(int32_t shards, int32_t ways) : fixed_shards_(shards), ways_(ways) {}
  const char* name() const override { return "set-assoc"; }
  void do_reset(int32_t H, InitialState initial) override {
    const int32_t shards = fixed_shards_ > 0 ? fixed_shards_ : H / ways_;
    if (shards < 1 || int64_t{shards} * ways_ != H) {
      throw_error("swap-in policy set-assoc: {} shards x {} ways != device_buffer_size H = {}; use a buffer size "
                  "that is a multiple of {} (or set-assoc:SxW with S x W = H)",
                  shards, ways_, H, ways_);
    }
    shards_ = shards;
    slot_token_.resize(H);
    stamp_.resize(H);
    for (int32_t s = 0; s < H; ++s) {
      slot_token_[s] = initial == InitialState::kIdentity ? s : -1;
      stamp_[s] = s - H;  // before any step, lower slots older
    }
    now_ = 0;
  }
  void do_step(const StepInput& in, const StepContext& where, SwapInPlan& plan, SwapInScratch& scratch) override {
    const int32_t H = buffer_size();
    SlowStep st;
    if (!classify_step(slot_token_.data(), H, in, where, plan, scratch, st)) return;
    uint32_t* taken = scratch.slot_mark.data();  // == epoch: hit, or already chosen as a victim at this step
    for (int32_t m = 0; m < st.misses; ++m) {
      const int32_t home = shard_of(in.selected[scratch.miss_entry[m]]);
      int32_t victim = -1;
      for (int32_t d = 0; d < shards_ && victim < 0; ++d) {
        const int32_t first = ((home + d) % shards_) * ways_;
        for (int32_t s = first; s < first + ways_; ++s) {
          if (taken[s] != st.epoch && (victim < 0 || stamp_[s] < stamp_[victim])) victim = s;
        }
      }
      taken[victim] = st.epoch;  // evictable >= misses (classify_step), so a victim always exists
      scratch.victims[m] = victim;
    }
    emit_loads(in, where, st, plan, scratch);
    // The contract's recency order: this step's loads (miss order), then its hits (in their previous order).
    for (int32_t m = 0; m < st.misses; ++m) stamp_[scratch.victims[m]] = ++now_;
    int32_t* hits = scratch.hits.data();
    std::sort(hits, hits + st.hit_slots, [&](int32_t a, int32_t b) { return stamp_[a] < stamp_[b]; });
    for (int32_t k = 0; k < st.hit_slots; ++k) stamp_[hits[k]] = ++now_;
    commit_loads(slot_token_.data(), in, st, plan, scratch);
  }
  const int32_t* slot_token() const override { return slot_token_.data(); }
  int32_t buffer_size() const override { return static_cast<int32_t>(slot_token_.size()); }

 private:
  int32_t shard_of(int32_t t) const {
    const uint32_t h = static_cast<uint32_t>(t) * 2654435761u;
    return static_cast<int32_t>((static_cast<uint64_t>(h) * static_cast<uint64_t>(shards_)) >> 32);
  }
  int32_t fixed_shards_;  // 0: H / ways
  int32_t ways_;
  int32_t shards_ = 0;
  std::vector<int32_t> slot_token_;  // [H]
  std::vector<int64_t> stamp_;       // [H] recency: larger = more recently hit or loaded
  int64_t now_ = 0;
};

}  // namespace

std::unique_ptr<SwapInPolicy> make_set_assoc_policy(int32_t shards, int32_t ways) {
  return std::make_unique<SetAssocPolicy>(shards, ways);
}

}  // namespace hisparse::cpu_ref
