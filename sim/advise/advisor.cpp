// @brief The advisor's arithmetic (see advisor.h): a setting on a context-length mix through the capacity model
// (sim/capacity/capacity.h, the planner's own), the search, the break-even scans and the trade-off curves.
#include "sim/advise/advisor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "sim/capacity/capacity.h"
#include "sim/cost/step/decode_cost_model.h"

namespace hisparse::sim {

namespace {

constexpr double kTie = 1e-9;  // relative: goodputs closer than this are equal (floating-point noise only)

bool more(double a, double b) { return a > b * (1 + kTie) + 1e-12; }

}  // namespace

bool more_tokens(double a, double b) { return more(a, b); }

Scenario with_setting(const Scenario& s, KvMode mode, int32_t H, int32_t ratio) {
  Scenario out = s;
  out.deployment.hisparse_enabled = uses_host_pool(mode);
  if (uses_host_pool(mode)) {
    out.deployment.hisparse.device_buffer_size = H;
    out.deployment.hisparse.host_to_device_ratio = ratio;
    out.deployment.hisparse.validate(fmt::format("advise: device_buffer_size {} / host_to_device_ratio {}", H, ratio));
  }
  out.deployment.max_running_requests = 0;  // the advisor chooses it
  return out;
}

std::string Candidate::name() const {
  if (mode == KvMode::kFull) return "full KV";
  return fmt::format("{} H={} ratio={}", mode == KvMode::kHiSparse ? "HiSparse" : "dynamic residency", buffer_size, ratio);
}

std::string hisparse_config_json(int32_t top_k, int32_t device_buffer_size, int32_t host_to_device_ratio) {
  JsonWriter j;
  j.begin_object(JsonWriter::Layout::kInline).member("top_k", top_k).member("device_buffer_size", device_buffer_size);
  return j.member("host_to_device_ratio", host_to_device_ratio).end_object().str();
}

std::string sglang_flags(const Candidate& c, const Scenario& s) {
  const RankLayout lay = rank_layout(s);
  std::string f;
  if (uses_host_pool(c.mode))
    f = fmt::format("--enable-hisparse --hisparse-config '{}' ",
                    hisparse_config_json(s.deployment.hisparse.top_k, c.buffer_size, c.ratio));
  return f + fmt::format("--max-running-requests {}", c.per_rank * lay.ranks);
}

std::string deployment_sglang_flags(const Scenario& s) {
  const DeploymentSpec& d = s.deployment;
  std::string f;
  if (d.hisparse_enabled && family_of(s).offload(s.model).applies)
    f = fmt::format("--enable-hisparse --hisparse-config '{}'", hisparse_config_json(d.hisparse.top_k,
                    d.hisparse.device_buffer_size, d.hisparse.host_to_device_ratio));
  if (d.max_running_requests > 0)
    f += fmt::format("{}--max-running-requests {}", f.empty() ? "" : " ",
                     int64_t{d.max_running_requests} * rank_layout(s).ranks);
  return f.empty() ? "HiSparse off (full KV), no --max-running-requests" : f;
}

std::vector<int32_t> advise_buffer_sizes(const Scenario& s, const AdviseOptions& o) {
  std::vector<int32_t> v = o.buffer_sizes.empty() ? default_buffer_sweep(s) : o.buffer_sizes;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  for (int32_t h : v)
    if (h < s.deployment.hisparse.top_k)
      throw_error("advise: buffer size {} is below top_k {} (SGLang requires device_buffer_size >= top_k)", h,
                  s.deployment.hisparse.top_k);
  return v;
}

std::vector<int32_t> advise_ratios(const Scenario& s, const AdviseOptions& o) {
  std::vector<int32_t> v = o.ratios.empty() ? default_ratio_sweep(s) : o.ratios;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  for (int32_t r : v)
    if (r < 1) throw_error("advise: host_to_device_ratio {} (expected >= 1)", r);
  return v;
}

Candidate evaluate_candidate(const Scenario& base, const ContextMix& mix, const MissCurves& misses, KvMode mode,
                             int32_t H, int32_t ratio, const AdviseOptions& o) {
  mix.validate("advise");
  const Scenario s = with_setting(base, mode, H, ratio);
  const bool hs = uses_host_pool(mode);
  std::vector<int64_t> lens;
  for (const auto& c : mix.classes) lens.push_back(c.seq_len);
  const MemoryBudget b = compute_memory_budget(s, lens);
  const RankLayout lay = rank_layout(s);
  const StepTimeModel model(s, o.cost, mode, hs ? MissFraction([&misses, H](int64_t n) { return misses.fraction(H, n); })
                                                : MissFraction());
  // The capacity model (sim/capacity/capacity.h), as the planner's rows; a setting whose host pools exceed host DRAM
  // does not launch, so it fits nothing here.
  CapacityOptions co;
  co.host_reserve_bytes = o.host_reserve_bytes;
  co.batch_cap = o.batch_cap;
  co.host_pools_must_fit = true;
  co.calibrated_swap_in = o.cost.swap_in_cost.calibrated;
  const Capacity cap = capacity_limits(s, b, mix, mode, model, co);

  Candidate c;
  c.mode = mode;
  c.buffer_size = hs ? H : 0;
  c.ratio = hs ? ratio : 0;
  c.limits = cap.limits;
  find_limit(c.limits, "max_running_requests").formula = "chosen by the advisor (the recommended --max-running-requests)";
  c.binding_limit = cap.binding_limit;
  c.per_rank = cap.per_rank;
  c.concurrency = c.per_rank * lay.ranks;
  c.hbm_per_request = cap.hbm_per_request;
  c.host_per_request = cap.host_per_request;
  c.misses_per_request_step = cap.misses_per_request_step;
  c.pool_tokens = cap.pool_tokens;
  c.logical_pool_tokens = cap.logical_pool_tokens;
  c.host_pool_tokens = cap.host_pool_tokens;
  c.host_pool_bytes_per_node = cap.host_pool_bytes_per_node;
  if (c.per_rank > 0) {
    const StepEstimate e = model.step(c.per_rank, mix);
    c.goodput = e.tokens_per_s;
    c.tpot_ms = e.tpot_ns * 1e-6;
    c.h2d_bytes_per_step = e.h2d_bytes;
  }
  return c;
}

bool better_candidate(const Candidate& a, const Candidate& b) {
  if (more(a.goodput, b.goodput)) return true;
  if (more(b.goodput, a.goodput)) return false;
  if (a.mode != b.mode) return a.mode == KvMode::kFull;
  if (a.host_pool_bytes_per_node != b.host_pool_bytes_per_node) return a.host_pool_bytes_per_node < b.host_pool_bytes_per_node;
  if (a.hbm_per_request != b.hbm_per_request) return a.hbm_per_request < b.hbm_per_request;
  return a.buffer_size < b.buffer_size;
}

namespace {

int best_of(const std::vector<Candidate>& v, const std::function<bool(const Candidate&)>& keep) {
  int best = -1;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].feasible() && keep(v[i]) && (best < 0 || better_candidate(v[i], v[static_cast<size_t>(best)]))) best = static_cast<int>(i);
  return best;
}

void mark_pareto(std::vector<Candidate>& v) {
  for (auto& a : v) {
    if (!a.feasible()) continue;
    bool dom_t = false, dom_h = false;
    for (const auto& b : v) {
      if (&a == &b || !b.feasible()) continue;
      // b dominates a: at least as good on both axes and strictly better on one.
      if (b.goodput >= a.goodput && b.tpot_ms <= a.tpot_ms && (more(b.goodput, a.goodput) || b.tpot_ms < a.tpot_ms)) dom_t = true;
      if (b.goodput >= a.goodput && b.hbm_per_request <= a.hbm_per_request &&
          (more(b.goodput, a.goodput) || b.hbm_per_request < a.hbm_per_request))
        dom_h = true;
    }
    a.pareto_tpot = !dom_t;
    a.pareto_hbm = !dom_h;
  }
}

double tokens_at(const StepTimeModel& m, const ContextMix& mix, int64_t batch, int64_t limit) {
  const int64_t b = std::min(batch, limit);
  return b > 0 ? m.step(b, mix).tokens_per_s : 0.0;
}

TradeoffCurve tradeoff(const Scenario& base, const ContextMix& mix, const MissCurves& misses, const Candidate& c,
                       const AdviseOptions& o) {
  const Scenario s = with_setting(base, c.mode, c.buffer_size, c.ratio);
  const bool hs = c.mode == KvMode::kHiSparse;
  const int32_t H = c.buffer_size;
  const StepTimeModel m(s, o.cost, hs, hs ? MissFraction([&misses, H](int64_t n) { return misses.fraction(H, n); }) : MissFraction());
  const RankLayout lay = rank_layout(s);
  const SimTime slo = static_cast<SimTime>(std::llround(s.deployment.tpot_slo_ms * 1e6));
  TradeoffCurve t;
  t.setting = c.name();
  std::set<int64_t> bs;
  const int64_t top = std::max<int64_t>(1, c.per_rank);
  for (int i = 0; i < 24; ++i) bs.insert(std::max<int64_t>(1, std::llround(std::pow(static_cast<double>(top), i / 23.0))));
  for (int64_t B : bs) {
    const StepEstimate e = m.step(B, mix);
    t.points.push_back(CurvePoint{B, B * lay.ranks, e.tpot_ns * 1e-6, e.tokens_per_s, e.cost.h2d * 1e-6, e.tpot_ns <= slo});
  }
  return t;
}

BreakEven break_even(const Scenario& base, const ContextMix& mix, const MissCurves& misses, const Candidate& full,
                     const Candidate& hs, const AdviseOptions& o) {
  BreakEven be;
  be.hisparse_setting = hs.name();
  const Scenario sf = with_setting(base, KvMode::kFull, 0, 0);
  const Scenario sh = with_setting(base, KvMode::kHiSparse, hs.buffer_size, hs.ratio);
  const int32_t H = hs.buffer_size;
  const StepTimeModel mf(sf, o.cost, false, nullptr);
  const StepTimeModel mh(sh, o.cost, true, [&misses, H](int64_t n) { return misses.fraction(H, n); });
  const RankLayout lay = rank_layout(base);
  // Batches 1, 2, 3, 4, then geometric up to past HiSparse's own limit.
  std::set<int64_t> bs = {1, 2, 3, 4, full.per_rank, full.per_rank + 1, hs.per_rank};
  const int64_t top = std::max<int64_t>({4, hs.per_rank, full.per_rank + 1}) + 1;
  for (double b = 4; b < top; b *= 1.25) bs.insert(std::llround(b));
  for (int64_t B : bs) {
    if (B < 1 || B > top) continue;
    ConcurrencyPoint p;
    p.batch_per_rank = B;
    p.concurrency = B * lay.ranks;
    p.full_tokens_per_s = tokens_at(mf, mix, B, full.per_rank);
    p.hisparse_tokens_per_s = tokens_at(mh, mix, B, hs.per_rank);
    p.ratio = p.full_tokens_per_s > 0 ? p.hisparse_tokens_per_s / p.full_tokens_per_s : 0;
    if (p.full_tokens_per_s > 0 || p.hisparse_tokens_per_s > 0) be.by_concurrency.push_back(p);
    if (be.pays_from_batch_per_rank < 0 && more(p.hisparse_tokens_per_s, p.full_tokens_per_s)) be.pays_from_batch_per_rank = B;
    if (B == 1) be.ratio_at_batch_1 = p.ratio;
    if (B == 2) be.ratio_at_batch_2 = p.ratio;
    if (p.full_tokens_per_s > 0 && p.ratio > be.best_ratio) {
      be.best_ratio = p.ratio;
      be.best_ratio_batch_per_rank = B;
    }
  }
  std::vector<int64_t> lens = o.break_even_seq_lens;
  if (lens.empty())
    for (int64_t n = 4096; n <= base.deployment.context_length; n = n < 32768 ? n * 2 : n + 32768) lens.push_back(n);
  bool won = false;
  for (int64_t n : lens) {
    const ContextMix one = ContextMix::single(n);
    const Candidate f = evaluate_candidate(base, one, misses, KvMode::kFull, 0, 0, o);
    const Candidate h = evaluate_candidate(base, one, misses, KvMode::kHiSparse, hs.buffer_size, hs.ratio, o);
    SeqLenPoint p{n, f.goodput, h.goodput, f.concurrency, h.concurrency, f.binding_limit, h.binding_limit,
                  f.goodput > 0 ? h.goodput / f.goodput : 0};
    be.by_seq_len.push_back(p);
    const bool wins = more(h.goodput, f.goodput);
    if (wins && be.pays_from_seq_len < 0) be.pays_from_seq_len = n;
    if (won && !wins && be.loses_again_from_seq_len < 0) be.loses_again_from_seq_len = n;
    won = won || wins;
  }
  return be;
}

}  // namespace

Advice advise(const Scenario& s, const ContextMix& mix, const MissCurves& misses, const AdviseOptions& o) {
  mix.validate("advise");
  Advice a;
  a.mix = mix;
  a.candidates.push_back(evaluate_candidate(s, mix, misses, KvMode::kFull, 0, 0, o));
  for (int32_t H : advise_buffer_sizes(s, o))
    for (int32_t r : advise_ratios(s, o)) a.candidates.push_back(evaluate_candidate(s, mix, misses, KvMode::kHiSparse, H, r, o));
  mark_pareto(a.candidates);
  a.robustness = assess_robustness(s, mix, misses, a.candidates, o);
  a.best = a.robustness.chosen;
  a.best_full = best_of(a.candidates, [](const Candidate& c) { return c.mode == KvMode::kFull; });
  a.best_default_source = best_of(a.candidates, [](const Candidate&) { return true; });
  // What follows the recommendation describes it: the HiSparse setting compared with full KV is the recommendation
  // itself when it is HiSparse, else the rule's best HiSparse setting (not the best under the default source alone).
  if (a.best >= 0 && a.candidates[static_cast<size_t>(a.best)].mode == KvMode::kHiSparse) {
    a.best_hisparse = a.best;
  } else {
    for (size_t i = 0; i < a.candidates.size(); ++i)
      if (a.candidates[i].feasible() && a.candidates[i].mode == KvMode::kHiSparse &&
          (a.best_hisparse < 0 || rule_prefers(a.robustness, a.candidates, static_cast<int>(i), a.best_hisparse)))
        a.best_hisparse = static_cast<int>(i);
  }
  if (a.best < 0) {
    a.notes.push_back("no setting fits a single request within the memory and the TPOT SLO: relax the SLO, shorten "
                      "the contexts or add GPUs");
    return a;
  }
  const Candidate& best = a.candidates[static_cast<size_t>(a.best)];
  // The runner-up by the same rule: the best candidate with another mode or another device_buffer_size.
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    const Candidate& c = a.candidates[i];
    if (c.feasible() && (c.mode != best.mode || c.buffer_size != best.buffer_size) &&
        (a.runner_up < 0 || rule_prefers(a.robustness, a.candidates, static_cast<int>(i), a.runner_up)))
      a.runner_up = static_cast<int>(i);
  }
  a.curves.push_back(tradeoff(s, mix, misses, best, o));
  const int other = best.mode == KvMode::kFull ? a.best_hisparse : a.best_full;
  if (other >= 0) a.curves.push_back(tradeoff(s, mix, misses, a.candidates[static_cast<size_t>(other)], o));
  if (a.best_full >= 0 && a.best_hisparse >= 0)
    a.break_even = break_even(s, mix, misses, a.candidates[static_cast<size_t>(a.best_full)],
                              a.candidates[static_cast<size_t>(a.best_hisparse)], o);
  // Dynamic residency (DeepSeek-V4: resident requests keep every C4 entry in the C4 device pool, demoted ones the
  // buffer of H + page / 4 entries; sim/cost/step/dynamic_residency.h).
  if (family_of(s).compressed_pools()) {
    a.notes.push_back("DeepSeek-V4: the C128 states are sized without max_running_requests (the advisor's output)");
    a.notes.push_back(dsv4_modelled_terms_note(s));
  }
  if (family_of(s).dynamic_residency() && a.best_full >= 0 && a.best_hisparse >= 0)
    a.dynamic = advise_dynamic(s, mix, misses, a.candidates[static_cast<size_t>(a.best_full)],
                               a.candidates[static_cast<size_t>(a.best_hisparse)], o);
  if (a.best_hisparse >= 0 && !a.break_even.by_concurrency.empty()) {
    std::vector<int64_t> batches;
    for (const ConcurrencyPoint& p : a.break_even.by_concurrency) batches.push_back(p.batch_per_rank);
    a.mtp = compare_mtp(s, mix, misses, a.candidates[static_cast<size_t>(a.best_hisparse)], o, batches);
  }
  if (a.best_full < 0) a.notes.push_back("full KV fits no request of this mix within HBM and the SLO");
  if (a.best_hisparse < 0) a.notes.push_back("no HiSparse setting of the sweep fits a request");
  return a;
}

}  // namespace hisparse::sim
