// @brief The dynamic-residency candidate of `hisparse advise` (see DynamicAdvice in advisor.h): evaluated at the best
// HiSparse setting's H and ratio, its tokens/s against full KV's and HiSparse's by concurrency, and the text saying
// where it wins.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sim/advise/advisor.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {

namespace {

std::string count(int64_t v) { return plan_int(v); }

}  // namespace

DynamicAdvice advise_dynamic(const Scenario& base, const ContextMix& mix, const MissCurves& misses, const Candidate& full,
                             const Candidate& hs, const AdviseOptions& o) {
  DynamicAdvice d;
  const int32_t H = hs.buffer_size;
  d.candidate = evaluate_candidate(base, mix, misses, KvMode::kDynamic, H, hs.ratio, o);
  const MissFraction f = [&misses, H](int64_t n) { return misses.fraction(H, n); };
  const StepTimeModel mf(with_setting(base, KvMode::kFull, 0, 0), o.cost, KvMode::kFull, nullptr);
  const StepTimeModel mh(with_setting(base, KvMode::kHiSparse, H, hs.ratio), o.cost, KvMode::kHiSparse, f);
  const StepTimeModel md(with_setting(base, KvMode::kDynamic, H, hs.ratio), o.cost, KvMode::kDynamic, f);
  d.resident_per_rank = md.max_resident_batch(mix, d.candidate.per_rank);
  const int64_t ranks = rank_layout(base).ranks;
  // Past a mode's own limit the extra requests wait: its tokens/s stay at the limit's.
  auto at = [&mix](const StepTimeModel& m, int64_t B, int64_t limit) {
    const int64_t b = std::min(B, limit);
    return b > 0 ? m.step(b, mix).tokens_per_s : 0.0;
  };
  std::set<int64_t> bs = {1, 2, 3, 4, d.resident_per_rank, d.resident_per_rank + 1, full.per_rank, hs.per_rank,
                          d.candidate.per_rank};
  const int64_t top = std::max<int64_t>({4, hs.per_rank, full.per_rank + 1, d.candidate.per_rank}) + 1;
  for (double b = 4; b < top; b *= 1.25) bs.insert(std::llround(b));
  for (int64_t B : bs) {
    if (B < 1 || B > top) continue;
    DynamicPoint p;
    p.batch_per_rank = B;
    p.concurrency = B * ranks;
    p.full_tokens_per_s = at(mf, B, full.per_rank);
    p.hisparse_tokens_per_s = at(mh, B, hs.per_rank);
    p.dynamic_tokens_per_s = at(md, B, d.candidate.per_rank);
    p.swap_per_rank = md.swap_requests(std::min(B, d.candidate.per_rank), mix);
    if (B == 1 && p.full_tokens_per_s > 0) d.ratio_to_full_at_batch_1 = p.dynamic_tokens_per_s / p.full_tokens_per_s;
    const bool best = more_tokens(p.dynamic_tokens_per_s, p.full_tokens_per_s) &&
                      more_tokens(p.dynamic_tokens_per_s, p.hisparse_tokens_per_s);
    if (best && d.best_from < 0) d.best_from = B;
    if (best) d.best_to = B;
    d.by_concurrency.push_back(p);
  }
  return d;
}

std::string dynamic_text(const DynamicAdvice& d, int ranks) {
  const Candidate& c = d.candidate;
  if (c.mode != KvMode::kDynamic) return "";
  std::string o = fmt::format(
      "dynamic residency (SGLang PRs #23935/#30266, open; modelled): {}: {} tok/s at concurrency {} (TPOT {:.2f} ms, "
      "bound by {}); resident, full KV's step, up to {} per rank; at batch 1 it gives {:.2f}× of full KV's tokens/s",
      c.name(), count(std::llround(c.goodput)), count(c.concurrency), c.tpot_ms, c.binding_limit,
      count(d.resident_per_rank), d.ratio_to_full_at_batch_1);
  if (d.best_from > 0)
    o += fmt::format("; more than both full KV and HiSparse from {} to {} per rank ({} to {} per instance)",
                     count(d.best_from), count(d.best_to), count(d.best_from * ranks), count(d.best_to * ranks));
  else
    o += "; never more than both full KV and HiSparse in this range";
  return o + ".";
}

}  // namespace hisparse::sim
