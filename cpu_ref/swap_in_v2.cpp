// @brief HiSparse V2 swap-in reference (see swap_in_v2.h); the rules follow SGLang's swap_in_plan_kernel
// (python/sglang/kernels/ops/kvcache/hisparse_v2.py, PR #32314), restated in docs/swap_in.md.
#include "cpu_ref/swap_in_v2.h"

#include <algorithm>

#include "core/error.h"
#include "core/hisparse_v2.h"

namespace hisparse::cpu_ref {

void swap_in_v2(SwapInV2StateView state, const SwapInV2Step& in, const StepContext& where, SwapInPlan& plan,
                SwapInScratch& scratch) {
  const int32_t H = state.H;
  if (!v2_buffer_size_ok(H, in.top_k, in.page)) {
    throw_error("swap-in hisparse-v2: request {}, layer {}: device_buffer_size H = {} must be a power of two, a "
                "multiple of the page ({}) and >= top_k K = {}",
                where.request, where.layer, H, in.page, in.top_k);
  }
  const uint32_t epoch = validate_and_mark(in.selected, in.count, in.n, in.top_k, H, where, plan, scratch);
  SwapInCounters& c = plan.counters;
  int32_t* slot_of = plan.slot_of.data();
  if (in.evicted_begin < 0 || in.evicted_begin > std::max(in.evicted_end, 0)) {
    throw_error("swap-in hisparse-v2: request {}, layer {}: evicted range [{}, {}) (expected 0 <= begin <= end)",
                where.request, where.layer, in.evicted_begin, in.evicted_end);
  }
  // Resident device pages pass through (slot H stands for "outside the buffer"): past the evicted prefix, and before
  // it where HiCache evicted only the prefix's tail nodes.
  const auto evicted = [&](int32_t t) { return t >= in.evicted_begin && t < in.evicted_end; };
  int32_t resident = 0;
  for (int32_t i = 0; i < in.count; ++i) {
    if (in.selected[i] >= 0 && !evicted(in.selected[i])) {
      slot_of[i] = H;
      ++resident;
    }
  }
  // Hits: a slot whose position an evicted entry selects is retained (its position is unique: a slot only ever
  // receives a missed position, which no other slot held).
  const int32_t* slot_pos = state.slot_pos;
  uint32_t* retained = scratch.slot_mark.data();
  int32_t hits = 0;
  scratch.with_table([&](auto table) {
    for (int32_t s = 0; s < H; ++s) {
      const int32_t p = slot_pos[s];
      if (p < 0 || !evicted(p)) continue;
      const int32_t e = table.find(p);
      if (e < 0) continue;
      slot_of[e] = s;
      retained[s] = epoch;
      ++hits;
    }
  });
  // Misses in entry order take the free slots: empty ones in slot order, then stale ones in slot order.
  int32_t nm = 0;
  for (int32_t i = 0; i < in.count; ++i) {
    if (slot_of[i] == kUnassigned) scratch.miss_entry[nm++] = i;
  }
  int32_t nf = 0;
  for (int pass = 0; pass < 2 && nf < nm; ++pass) {
    for (int32_t s = 0; s < H && nf < nm; ++s) {
      const bool empty = slot_pos[s] < 0;
      if (retained[s] != epoch && empty == (pass == 0)) scratch.victims[nf++] = s;
    }
  }
  if (nf < nm) {  // H >= K makes this impossible unless the state holds a position twice
    throw_error("swap-in hisparse-v2: request {}, layer {}, step {}: {} misses but only {} free slots; the buffer "
                "state is corrupt (a position held by two slots?)",
                where.request, where.layer, where.step, nm, nf);
  }
  plan.load_host.resize(nm);
  plan.load_slot.resize(nm);
  for (int32_t m = 0; m < nm; ++m) {  // every host row is checked before any state changes
    plan.load_host[m] = host_row_or_throw(in.host_loc, in.selected[scratch.miss_entry[m]], where);
    plan.load_slot[m] = scratch.victims[m];
  }
  for (int32_t m = 0; m < nm; ++m) {
    const int32_t e = scratch.miss_entry[m];
    state.slot_pos[scratch.victims[m]] = in.selected[e];
    slot_of[e] = scratch.victims[m];
  }
  c.newest_hits = resident;
  c.hits = hits;
  c.misses = nm;
  c.h2d_bytes = static_cast<int64_t>(nm) * in.row_bytes;
  c.fast_path = false;
}

}  // namespace hisparse::cpu_ref
