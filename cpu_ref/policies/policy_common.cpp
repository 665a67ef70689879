// @brief Shared step skeleton of the comparison policies (see policy_common.h).
#include "cpu_ref/policies/policy_common.h"

#include "core/error.h"

namespace hisparse::cpu_ref {

bool classify_step(const int32_t* slot_token, int32_t H, const StepInput& in, const StepContext& where,
                   SwapInPlan& plan, SwapInScratch& scratch, SlowStep& out) {
  const uint32_t epoch = validate_and_mark(in.selected, in.count, in.n, in.top_k, H, where, plan, scratch);
  SwapInCounters& c = plan.counters;
  int32_t* slot_of = plan.slot_of.data();
  if (in.n <= H) {
    for (int32_t i = 0; i < in.count; ++i) slot_of[i] = in.selected[i];
    c.hits = c.selected - c.newest_hits;
    c.fast_path = true;
    return false;
  }
  const int32_t newest = in.n - 1;
  uint32_t* slot_mark = scratch.slot_mark.data();
  int32_t* hits = scratch.hits.data();
  const int32_t nh = scratch.with_table([&](auto table) {
    if (c.newest_hits) slot_of[table.entry_of(newest)] = H;
    int32_t found = 0;
    for (int32_t s = 0; s < H; ++s) {
      const int32_t t = slot_token[s];
      const int32_t e = table.find(t);
      if (e >= 0) {
        slot_mark[s] = epoch;
        hits[found++] = s;
        if (t != newest) slot_of[e] = s;
      }
    }
    return found;
  });
  int32_t nm = 0;
  for (int32_t i = 0; i < in.count; ++i) {
    if (slot_of[i] == kUnassigned) scratch.miss_entry[nm++] = i;
  }
  if (nm > H - nh) {
    throw_error("swap-in: request {}, layer {}, step {}: {} misses but only {} evictable slots; the buffer state is "
                "corrupt (a token held by two slots?)",
                where.request, where.layer, where.step, nm, H - nh);
  }
  out.epoch = epoch;
  out.hit_slots = nh;
  out.misses = nm;
  out.evictable = H - nh;
  return true;
}

void emit_loads(const StepInput& in, const StepContext& where, const SlowStep& step, SwapInPlan& plan,
                const SwapInScratch& scratch) {
  const int32_t nm = step.misses;
  plan.load_host.resize(nm);
  plan.load_slot.resize(nm);
  for (int32_t m = 0; m < nm; ++m) {
    plan.load_host[m] = host_row_or_throw(in.host_loc, in.selected[scratch.miss_entry[m]], where);
    plan.load_slot[m] = scratch.victims[m];
  }
  SwapInCounters& c = plan.counters;
  c.misses = nm;
  c.hits = c.selected - c.newest_hits - nm;
  c.h2d_bytes = static_cast<int64_t>(nm) * in.row_bytes;
}

void commit_loads(int32_t* slot_token, const StepInput& in, const SlowStep& step, SwapInPlan& plan,
                  const SwapInScratch& scratch) {
  for (int32_t m = 0; m < step.misses; ++m) {
    const int32_t e = scratch.miss_entry[m];
    const int32_t s = scratch.victims[m];
    slot_token[s] = in.selected[e];
    plan.slot_of[e] = s;
  }
}

}  // namespace hisparse::cpu_ref
