// @brief Trace-replayed miss model and the fit of the statistical one: run a cpu_ref swap-in policy over a
// recorded top-k trace once, keep per-step (selected, misses), then look them up during the simulation; the fit
// bins through sim/miss/miss_fitter.h like every other fit.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "sim/miss/miss_fitter.h"
#include "sim/miss/miss_model.h"
#include "traces/trace_source.h"

namespace hisparse::sim {
namespace {

// Replays one request's recorded steps with one policy per layer.
void replay_request(const std::vector<traces::StepRecord>& steps, const traces::TraceMeta& meta,
                    const std::string& policy, int32_t H, int64_t row_bytes, std::vector<ReplayedStep>& out) {
  const int32_t L = meta.layers, K = meta.top_k;
  out.assign(steps.size(), ReplayedStep{});
  for (size_t s = 0; s < steps.size(); ++s) out[s].n = steps[s].seq_len;
  cpu_ref::SwapInScratch scratch;
  SwapInPlan plan;
  for (int32_t l = 0; l < L; ++l) {
    auto p = cpu_ref::make_policy(policy);
    p->reset(H, meta.initial_state);
    if (p->needs_future()) {
      std::vector<const int32_t*> sel;
      std::vector<int32_t> counts, ns;
      for (const auto& r : steps) { sel.push_back(r.layer(l, K)); counts.push_back(K); ns.push_back(r.seq_len); }
      p->set_future(std::make_shared<const cpu_ref::LayerFuture>(cpu_ref::build_layer_future(sel, counts, ns, H)));
    }
    for (size_t s = 0; s < steps.size(); ++s) {
      cpu_ref::StepInput in;
      in.selected = steps[s].layer(l, K);
      in.count = K;
      in.n = steps[s].seq_len;
      in.top_k = K;
      in.row_bytes = row_bytes;
      p->step(in, cpu_ref::StepContext{steps[s].request_id, l, steps[s].step}, plan, scratch);
      out[s].selected += plan.counters.selected;
      out[s].misses += plan.counters.misses;
      out[s].newest_hits += plan.counters.newest_hits;
    }
  }
}

class TraceMissModel final : public MissModel {
 public:
  TraceMissModel(ReplayedTrace t, std::string path, std::string policy, int32_t H, int32_t model_layers)
      : t_(std::move(t)), path_(std::move(path)), policy_(std::move(policy)), H_(H) {
    if (t_.requests.empty()) throw_error("trace miss model: trace {} holds no request with steps", path_);
    scale_ = static_cast<double>(model_layers) / t_.layers;
  }
  MissResult step(const MissQuery& q, double& carry) const override {
    const auto& steps = t_.requests[static_cast<size_t>(q.request % static_cast<int64_t>(t_.requests.size()))];
    size_t s = static_cast<size_t>(q.step);
    if (s >= steps.size()) s = steps.size() == 1 ? 0 : 1 + (s - 1) % (steps.size() - 1);
    MissResult out;
    const double sel = static_cast<double>(steps[s].selected) * scale_;
    const double mis = static_cast<double>(steps[s].misses) * scale_ + carry;
    out.selected = static_cast<int64_t>(std::llround(sel));
    out.misses = static_cast<int64_t>(std::floor(mis));
    carry = mis - static_cast<double>(out.misses);
    return out;
  }
  std::string describe() const override {
    return fmt::format("trace-replayed miss model: {} with policy {} at H {} ({} requests, {} layers, scale {:.4g})",
                       path_, policy_, H_, t_.requests.size(), t_.layers, scale_);
  }

 private:
  ReplayedTrace t_;
  std::string path_, policy_;
  int32_t H_;
  double scale_ = 1.0;
};

}  // namespace

ReplayedTrace replay_trace_counters(const std::string& trace_path, const std::string& policy, int32_t H,
                                    int64_t row_bytes) {
  auto src = traces::open_trace(trace_path);
  const traces::TraceMeta meta = src->meta();
  if (H < meta.top_k) throw_error("trace {}: H ({}) must be >= the trace's top_k ({})", trace_path, H, meta.top_k);
  ReplayedTrace out;
  out.layers = meta.layers;
  out.top_k = meta.top_k;
  out.empty_start = meta.initial_state == InitialState::kEmpty;
  std::vector<traces::StepRecord> steps;
  traces::StepRecord rec;
  auto flush = [&] {
    if (steps.empty()) return;
    out.requests.emplace_back();
    replay_request(steps, meta, policy, H, row_bytes, out.requests.back());
    steps.clear();
  };
  while (src->next(rec)) {
    if (!steps.empty() && rec.request_id != steps.back().request_id) flush();
    steps.push_back(rec);
  }
  flush();
  return out;
}

std::unique_ptr<MissModel> make_trace_miss_model(const std::string& trace_path, const std::string& policy,
                                                 int32_t H, int32_t model_layers, int64_t row_bytes) {
  return std::make_unique<TraceMissModel>(replay_trace_counters(trace_path, policy, H, row_bytes), trace_path,
                                          policy, H, model_layers);
}

StatisticalMissParams fit_statistical_miss_model(const std::string& trace_path, const std::string& policy,
                                                 int32_t H, int32_t model_layers, int64_t row_bytes) {
  const traces::TraceMeta meta = traces::open_trace(trace_path)->meta();
  const double h_over_k = static_cast<double>(H) / std::max(1, meta.top_k);
  MissFitter fitter;
  replay_into_fitter(fitter, trace_path, {policy}, {H}, {h_over_k}, row_bytes, 1);
  const MissColumn c = fitter.column(policy, h_over_k);
  if (c.steady.empty())
    throw_error("trace {}: no slow-path step (n > H = {}) after the warm-up (steps 1..{}) to fit a miss fraction to; "
                "use a smaller H or a longer trace",
                trace_path, H, warmup_steps_for(H, meta.top_k));
  StatisticalMissParams p;
  p.layers = model_layers;
  p.top_k = meta.top_k;
  p.H = H;
  p.fitted_from = fmt::format("{} (policy {})", trace_path, policy);
  // The simulator's first step follows an empty start; a trace starting from another buffer does not measure it.
  const bool empty_start = meta.initial_state == InitialState::kEmpty;
  p.first_step_fraction = empty_start && c.first_step_samples > 0 ? c.first_step : 1.0;
  // A trace whose warm-up never leaves the fast path measures none: the steady curve then applies from the start.
  p.warmup_steps = c.warmup_samples > 0 ? warmup_steps_for(H, meta.top_k) : 0;
  p.warmup_fraction = c.warmup_samples > 0 ? c.warmup : 1.0;
  p.by_ratio = c.steady;
  return p;
}

}  // namespace hisparse::sim
