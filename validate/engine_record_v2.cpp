// @brief SGLang's HiSparse V2 plan kernel (swap_in_plan_kernel, sgl-project/sglang cb4d3e8) from the engine record
// against cpu_ref::swap_in_v2, slot for slot: every plan entry and every slot_pos entry after every step, zero
// mismatches required (docs/swap_in.md, "HiSparse V2"). The evicted prefix is the record's evicted_end, given directly.
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/swap_in_v2.h"
#include "validate/engine_record.h"

namespace hisparse::validation {
namespace {

/// cpu_ref's plan in SGLang's encoding: a buffer hit is its slot, a miss (a slot of the load list) slot + nslot, a
/// device-resident entry (slot_of = H) and padding -1.
void sglang_plan(const SwapInPlan& plan, int32_t nslot, std::vector<uint8_t>& loaded, int32_t* out) {
  loaded.assign(static_cast<size_t>(nslot), 0);
  for (int32_t s : plan.load_slot) loaded[static_cast<size_t>(s)] = 1;
  for (size_t i = 0; i < plan.slot_of.size(); ++i) {
    const int32_t s = plan.slot_of[i];
    out[i] = s < 0 || s >= nslot ? -1 : loaded[static_cast<size_t>(s)] ? s + nslot : s;
  }
}

void count(EngineCheckRow& row, int32_t ref, int32_t got, const std::string& where) {
  ++row.elements;
  if (ref == got) return;
  if (row.mismatches++ == 0) row.detail = fmt::format("first mismatch: {}: reference {}, SGLang {}", where, ref, got);
}

void check_case(const V2PlanRecord& c, int index, EngineCheckResult& out) {
  const int32_t H = static_cast<int32_t>(c.nslot), K = static_cast<int32_t>(c.topk);
  EngineCheckRow plan_row, state_row;
  plan_row.name = fmt::format("v2 case{} plan", index);
  state_row.name = fmt::format("v2 case{} slot_pos", index);
  for (EngineCheckRow* r : {&plan_row, &state_row}) r->exact = true, r->bound = "exact";
  std::vector<int32_t> slot_pos(static_cast<size_t>(c.batch * c.nslot), -1);  // admit_request clears the buffer
  std::vector<int32_t> mapped(static_cast<size_t>(K));
  std::vector<uint8_t> loaded;
  cpu_ref::SwapInScratch scratch;
  SwapInPlan plan;
  for (int64_t step = 0; step < c.steps; ++step) {
    for (int64_t b = 0; b < c.batch; ++b) {
      const size_t lanes = static_cast<size_t>((step * c.batch + b) * c.topk);
      const cpu_ref::SwapInV2Step in{c.topk_idx.data() + lanes, K, static_cast<int32_t>(c.seq), K,
                                     static_cast<int32_t>(c.evicted_end), kHisparseV2PageSize, nullptr, 1};
      int32_t* state = slot_pos.data() + b * c.nslot;
      try {
        cpu_ref::swap_in_v2({state, H}, in, {b, 0, step}, plan, scratch);
      } catch (const Error& e) {
        throw_error("v2_case{}_topk: the reference refuses step {}, request {}: {}", index, step, b, e.what());
      }
      sglang_plan(plan, H, loaded, mapped.data());
      for (int32_t lane = 0; lane < K; ++lane)
        count(plan_row, mapped[static_cast<size_t>(lane)], c.plan[lanes + static_cast<size_t>(lane)],
              fmt::format("step {}, request {}, lane {} (position {})", step, b, lane, in.selected[lane]));
      const size_t slots = static_cast<size_t>((step * c.batch + b) * c.nslot);
      for (int32_t s = 0; s < H; ++s)
        count(state_row, state[s], c.slot_pos[slots + static_cast<size_t>(s)],
              fmt::format("step {}, request {}, slot {}", step, b, s));
    }
  }
  for (EngineCheckRow* r : {&plan_row, &state_row}) {
    r->pass = r->mismatches == 0;
    out.rows.push_back(*r);
  }
}

}  // namespace

void check_engine_v2(const EngineRecord& record, EngineCheckResult& out) {
  for (size_t i = 0; i < record.v2.size(); ++i) check_case(record.v2[i], static_cast<int>(i), out);
}

}  // namespace hisparse::validation
