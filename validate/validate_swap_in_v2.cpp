// @brief `validate --only swap-in-v2`: the HiSparse V2 swap-in kernel (cuda/swap_in_v2.h) against
// cpu_ref::swap_in_v2, bit for bit: every slot, load, counter and the state after each step. Random cases (rows with
// their own evicted prefix, random or empty starting states, several steps each so states evolve) and, with
// --trace, whole traces (one row per layer, the evicted prefix from each request's first step, page 64). The evicted
// prefix follows both coordinators (core/hisparse_v2.h): even rows the older rules (the whole prefix evicted), odd rows
// the current ones (the short-prefix gate, and HiCache's leaf-first eviction: only the prefix's tail nodes evicted,
// v2_evicted_begin, with a random node length and eviction demand).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/hisparse_v2.h"
#include "cpu_ref/swap_in_v2.h"
#include "cuda/swap_in_v2.h"
#include "traces/trace_source.h"
#include "validate/validate.h"

namespace hisparse::validation {
namespace {

/// The V2 coordinator whose admission decides row b's evicted prefix: both rule sets in every batch.
V2Coordinator v2_rules_of_row(int32_t b) { return b % 2 ? V2Coordinator::kCurrent : V2Coordinator::kOlder; }

/// One batch's arrays in the kernel's layout, on one side.
struct V2Side {
  std::vector<int32_t> slot_pos, slot_of, load_slot, load_pos;
  std::vector<int64_t> counters;
};

struct V2Case {
  int32_t R = 0, K = 0, H = 0;
  std::vector<int32_t> selected, evicted_end, evicted_begin, n;
};

/// Row b's evicted range [begin, end) under its coordinator: the tail nodes that `demand` tokens of eviction take
/// (current) or the whole prefix (older).
int32_t v2_begin_of_row(int32_t b, int32_t E, int32_t node_tokens, int32_t demand) {
  return v2_evicted_begin(E, node_tokens, demand, v2_rules_of_row(b));
}

/// cpu_ref::swap_in_v2 row by row (page 1: the kernel does not check V2's buffer-size rule, the reference is asked
/// only about the step itself).
void run_reference(const V2Case& c, V2Side& side, int64_t step) {
  cpu_ref::SwapInScratch scratch;
  SwapInPlan plan;
  side.slot_of.assign(size_t(c.R) * c.K, -1);
  side.load_slot.assign(size_t(c.R) * c.K, -1);
  side.load_pos.assign(size_t(c.R) * c.K, -1);
  side.counters.assign(size_t(c.R) * cuda::kSwapInV2CounterWords, 0);
  for (int32_t b = 0; b < c.R; ++b) {
    const int32_t* sel = c.selected.data() + size_t(b) * c.K;
    const cpu_ref::SwapInV2Step in{sel, c.K, c.n[b], c.K, c.evicted_end[b], 1, nullptr, 1, c.evicted_begin[b]};
    cpu_ref::swap_in_v2({side.slot_pos.data() + size_t(b) * c.H, c.H}, in, {b, 0, step}, plan, scratch);
    std::copy(plan.slot_of.begin(), plan.slot_of.end(), side.slot_of.begin() + size_t(b) * c.K);
    for (size_t m = 0; m < plan.load_slot.size(); ++m) {
      side.load_slot[size_t(b) * c.K + m] = plan.load_slot[m];
      side.load_pos[size_t(b) * c.K + m] = static_cast<int32_t>(plan.load_host[m]);  // host row t = position t
    }
    int64_t* k = side.counters.data() + size_t(b) * cuda::kSwapInV2CounterWords;
    k[0] = plan.counters.selected;
    k[1] = plan.counters.newest_hits;
    k[2] = plan.counters.hits;
    k[3] = plan.counters.misses;
  }
}

void run_device(const ValidateContext& ctx, const V2Case& c, V2Side& side, int64_t step) {
  if (ctx.dut.name() != "cuda") return run_reference(c, side, step);  // --backend cpu: the harness check
  side.slot_of.assign(size_t(c.R) * c.K, 0);
  side.load_slot.assign(size_t(c.R) * c.K, 0);
  side.load_pos.assign(size_t(c.R) * c.K, 0);
  side.counters.assign(size_t(c.R) * cuda::kSwapInV2CounterWords, 0);
  cuda::SwapInV2Batch batch;
  batch.rows = c.R;
  batch.top_k = c.K;
  batch.H = c.H;
  batch.selected = c.selected.data();
  batch.evicted_end = c.evicted_end.data();
  batch.evicted_begin = c.evicted_begin.data();
  batch.slot_pos = side.slot_pos.data();
  batch.slot_of = side.slot_of.data();
  batch.load_slot = side.load_slot.data();
  batch.load_pos = side.load_pos.data();
  batch.counters = side.counters.data();
  cuda::swap_in_v2(batch);
}

void compare(Checker& check, const V2Side& ref, const V2Side& dut) {
  check.equal("slot_of", ref.slot_of, dut.slot_of);
  check.equal("load_slot", ref.load_slot, dut.load_slot);
  check.equal("load_pos", ref.load_pos, dut.load_pos);
  check.equal("counters (selected, resident, hits, misses)", ref.counters, dut.counters);
  check.equal("slot_pos", ref.slot_pos, dut.slot_pos);
}

/// K entries of row b: padding, positions the row's buffer holds (hits), other evicted ones, resident ones.
void draw_row(Rng& rng, const std::vector<int32_t>& held, int32_t K, int32_t n, int32_t B, int32_t E, int32_t* out) {
  std::vector<int32_t> chosen;
  for (int32_t i = 0; i < K; ++i) {
    int32_t t = -1;
    for (int tries = 0; tries < 4 && t < 0; ++tries) {
      const uint64_t kind = rng.below(8);
      int32_t cand = -1;
      if (kind == 0) break;  // padding
      if (kind <= 3 && !held.empty()) cand = held[rng.below(held.size())];
      else if (kind <= 5 && E > B) cand = B + static_cast<int32_t>(rng.below(E - B));
      else cand = static_cast<int32_t>(rng.below(n));
      if (cand >= 0 && std::find(chosen.begin(), chosen.end(), cand) == chosen.end()) t = cand;
    }
    if (t >= 0) chosen.push_back(t);
    out[i] = t;
  }
}

void random_cases(const ValidateContext& ctx, OpReport& report) {
  const auto& o = ctx.options;
  for (int64_t i = o.start_case; i < o.start_case + o.cases; ++i) {
    const uint64_t seed = case_seed(o.seed, "swap-in-v2", i);
    Rng rng(seed);
    V2Case c;
    c.R = 1 + static_cast<int32_t>(rng.below(8));
    const uint64_t shape = rng.below(16);
    c.K = shape == 0 ? 2048 : shape == 1 ? 512 : 1 + static_cast<int32_t>(rng.below(96));
    c.H = 1;
    while (c.H < c.K) c.H *= 2;
    c.H <<= rng.below(c.K >= 2048 ? 2 : 3);
    c.evicted_end.resize(c.R);
    c.evicted_begin.resize(c.R);
    c.n.resize(c.R);
    std::vector<int32_t> n0(c.R);
    V2Side ref, dut;
    ref.slot_pos.assign(size_t(c.R) * c.H, -1);
    for (int32_t b = 0; b < c.R; ++b) {
      n0[b] = 1 + static_cast<int32_t>(rng.below(6 * uint64_t(c.H)));
      // Both coordinators' admission (core/hisparse_v2.h): even rows the older rules, odd rows the current ones.
      const int32_t E = v2_admitted_evicted_end(n0[b], 1 << rng.below(7), c.H, v2_rules_of_row(b));
      c.evicted_end[b] = E;
      // Leaf-first eviction (current rows): nodes of 1..E tokens, a demand of 0..E tokens.
      const int32_t node = E > 0 ? 1 + static_cast<int32_t>(rng.below(E)) : 0;
      c.evicted_begin[b] = v2_begin_of_row(b, E, node, static_cast<int32_t>(rng.below(uint64_t(E) + 1)));
      // Half the rows start from a random state: distinct evicted positions in random slots, some empty.
      if (rng.chance(1, 2) && E > c.evicted_begin[b]) {
        std::vector<int32_t> pool;
        for (int32_t t = c.evicted_begin[b]; t < E; ++t) pool.push_back(t);
        for (size_t j = pool.size(); j > 1; --j) std::swap(pool[j - 1], pool[rng.below(j)]);
        for (int32_t s = 0; s < c.H && s < static_cast<int32_t>(pool.size()); ++s)
          if (!rng.chance(1, 4)) ref.slot_pos[size_t(b) * c.H + s] = pool[s];
      }
    }
    dut.slot_pos = ref.slot_pos;
    c.selected.resize(size_t(c.R) * c.K);
    ++report.cases;
    Checker check(report, o.seed, i, fmt::format("R={} K={} H={}", c.R, c.K, c.H));
    const int32_t steps = 1 + static_cast<int32_t>(rng.below(6));
    for (int32_t step = 0; step < steps && check.ok(); ++step) {
      for (int32_t b = 0; b < c.R; ++b) {
        c.n[b] = n0[b] + step;
        std::vector<int32_t> held;
        for (int32_t s = 0; s < c.H; ++s)
          if (ref.slot_pos[size_t(b) * c.H + s] >= 0) held.push_back(ref.slot_pos[size_t(b) * c.H + s]);
        draw_row(rng, held, c.K, c.n[b], c.evicted_begin[b], c.evicted_end[b], c.selected.data() + size_t(b) * c.K);
      }
      run_reference(c, ref, step);
      run_device(ctx, c, dut, step);
      compare(check, ref, dut);
    }
  }
}

void trace_cases(const ValidateContext& ctx, std::vector<OpReport>& out) {
  const auto& o = ctx.options;
  const int32_t K = open_trace_spec(o.trace, o.seed)->meta().top_k;
  int32_t H0 = kHisparseV2PageSize;
  while (H0 < K) H0 *= 2;
  for (const int32_t H : {H0, 2 * H0}) {
    out.push_back(OpReport{"swap-in-v2", fmt::format("trace H={}", H)});
    OpReport& report = out.back();
    auto src = open_trace_spec(o.trace, o.seed);
    V2Case c;
    c.R = src->meta().layers;
    c.K = K;
    c.H = H;
    c.evicted_end.resize(c.R);
    c.evicted_begin.resize(c.R);
    c.n.resize(c.R);
    V2Side ref, dut;
    traces::StepRecord rec;
    int64_t current = -1, records = 0;
    while (src->next(rec)) {
      if (o.trace_steps > 0 && records >= o.trace_steps) break;
      if (rec.request_id != current) {  // a new request: V2 admits it with an empty buffer
        current = rec.request_id;
        for (int32_t b = 0; b < c.R; ++b) {  // even rows (layers) the older rules, odd rows the current ones
          const int32_t E = v2_admitted_evicted_end(rec.seq_len, kHisparseV2PageSize, H, v2_rules_of_row(b));
          c.evicted_end[b] = E;
          // Current rows: nodes of 4 pages, half the prefix's tokens demanded (its head stays on the device).
          c.evicted_begin[b] = v2_begin_of_row(b, E, 4 * kHisparseV2PageSize, E / 2);
        }
        ref.slot_pos.assign(size_t(c.R) * H, -1);
        dut.slot_pos = ref.slot_pos;
      }
      ++records;
      ++report.cases;
      std::fill(c.n.begin(), c.n.end(), rec.seq_len);
      c.selected = rec.positions;
      Checker check(report, o.seed, records - 1,
                    fmt::format("trace {} request {} step {} H={}", o.trace, rec.request_id, rec.step, H));
      run_reference(c, ref, rec.step);
      run_device(ctx, c, dut, rec.step);
      compare(check, ref, dut);
      if (!check.ok()) break;  // the states diverged: later steps would only repeat the news
    }
  }
}

}  // namespace

void validate_swap_in_v2(const ValidateContext& ctx, std::vector<OpReport>& out) {
  out.push_back(OpReport{"swap-in-v2", "random"});
  random_cases(ctx, out.back());
  if (!ctx.options.trace.empty()) trace_cases(ctx, out);
}

}  // namespace hisparse::validation
