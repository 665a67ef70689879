// @brief Miss-fraction curves for the planner: a miss surface at any H, a given constant, or one replay pass of a
// trace over every H, binned by the MissFitter.
#include "sim/miss/miss_curve.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/miss/miss_fitter.h"
#include "traces/trace_source.h"

namespace hisparse::sim {
namespace {

std::string join_sizes(const std::vector<int32_t>& hs) {
  std::string out;
  for (int32_t H : hs) out += fmt::format("{}{}", out.empty() ? "" : ", ", H);
  return out;
}

std::string surface_sources(const MissSurface& s) {
  if (!s.has_provenance || s.provenance.traces.empty()) return "";
  std::string out;
  for (const MissTraceInfo& t : s.provenance.traces)
    out += fmt::format("{}{} (K {}, n {}..{})", out.empty() ? "" : ", ", t.path, t.top_k, t.n_min, t.n_max);
  return "; measured on " + out;
}

}  // namespace

MissCurves MissCurves::from_surface(const MissSurface& surface, const std::string& policy, int32_t top_k) {
  if (top_k < 1) throw_error("miss curves: top_k {} (expected >= 1)", top_k);
  const std::vector<MissColumn>& cols = surface.columns(policy);  // throws naming the file when absent
  MissCurves c;
  c.kind_ = Kind::kSurface;
  c.surface_ = std::make_shared<const MissSurface>(surface);
  c.policy_ = policy;
  c.top_k_ = top_k;
  c.description_ = fmt::format("miss surface {}, policy {}: steady-state fraction by H/K ({:g}..{:g} measured) and "
                               "n/H at K {}, capped by min(1, (n - H) / (K - 1)), flat beyond the measured range{}",
                               surface.label(), policy, cols.front().h_over_k, cols.back().h_over_k, top_k,
                               surface_sources(surface));
  return c;
}

MissCurves MissCurves::constant(double fraction, std::string why) {
  if (!(fraction >= 0 && fraction <= 1))
    throw_error("miss curves: constant fraction {} (expected in [0, 1])", fraction);
  MissCurves c;
  c.kind_ = Kind::kConstant;
  c.constant_ = fraction;
  c.description_ = fmt::format("{}: constant per-layer miss fraction {:.4g} of every slow-path step (n > H), "
                               "whatever H and n",
                               why, fraction);
  return c;
}

MissCurves MissCurves::from_trace(const std::string& trace_path, const std::string& policy,
                                  const std::vector<int32_t>& buffer_sizes, int64_t row_bytes, int threads,
                                  const MissCurves& fallback, int32_t scenario_top_k, bool rescale) {
  const traces::TraceMeta meta = traces::open_trace(trace_path)->meta();
  const int32_t Kt = meta.top_k;
  if (scenario_top_k < 1) throw_error("miss curves: scenario top_k {} (expected >= 1)", scenario_top_k);
  const bool rescaled = Kt != scenario_top_k;
  if (rescaled && !rescale)
    throw_error("trace {} was recorded at top_k {} but the scenario's top_k is {}: replayed as is, each buffer size "
                "H would face {} selections instead of {} (H/K {:.3g}x off) and its misses would not be the "
                "scenario's; record a trace at top_k {}, or pass --rescale-trace-top-k to replay it at the same H/K "
                "(H x {} / {}) and apply its fractions by n/H",
                trace_path, Kt, scenario_top_k, Kt, scenario_top_k, static_cast<double>(scenario_top_k) / Kt,
                scenario_top_k, Kt, scenario_top_k);
  // Each requested H → the buffer size replayed (the same H/K at the trace's K).
  std::map<int32_t, int32_t> replayed;
  for (int32_t H : buffer_sizes) {
    const int32_t Ht = rescaled ? static_cast<int32_t>(std::llround(static_cast<double>(H) * Kt / scenario_top_k)) : H;
    if (Ht < Kt)
      throw_error("miss curves: buffer size {}{} is below the trace's top_k {} ({}); drop it from the buffer sizes", H,
                  rescaled ? fmt::format(" (replayed at {})", Ht) : std::string(), Kt, trace_path);
    replayed[H] = Ht;
  }
  std::vector<int32_t> sizes;
  for (const auto& [H, Ht] : replayed) sizes.push_back(Ht);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<double> keys;
  for (int32_t Ht : sizes) keys.push_back(static_cast<double>(Ht) / Kt);

  MissFitter fitter;
  ReplayResult res;
  const MissTraceInfo info = replay_into_fitter(fitter, trace_path, {policy}, sizes, keys, row_bytes, threads, &res);
  MissCurves out;
  out.kind_ = Kind::kTrace;
  out.policy_ = policy;
  out.top_k_ = scenario_top_k;
  out.trace_n_min_ = info.n_min;
  out.trace_n_max_ = info.n_max;
  out.trace_step_seq_lens_ = std::move(res.step_seq_lens);
  out.fallback_ = std::make_shared<const MissCurves>(fallback);
  for (const auto& [H, Ht] : replayed) {
    const MissColumn col = fitter.column(policy, static_cast<double>(Ht) / Kt);
    if (col.steady.empty()) {
      // Charging zero misses past an H the trace never reached would flatter large buffers.
      out.unmeasured_.push_back(H);
      continue;
    }
    MissCurve mc;
    mc.by_ratio = col.steady;
    mc.ratio_min = col.n_over_h_min;
    mc.ratio_max = col.n_over_h_max;
    mc.slow_step_layers = col.samples;
    mc.warmup = col.warmup;
    mc.replayed_H = Ht;
    for (const ReplayConfigStats& cs : res.configs)
      if (cs.buffer_size == Ht) mc.hit_rate = cs.hit_rate();
    out.by_h_[H] = std::move(mc);
  }
  out.description_ = fmt::format("replayed top-k trace {} with policy {} ({} requests, {} decode steps, {} layers, "
                                 "top_k {}, n {}..{}); steady-state miss fraction (after the warm-up of ceil(H/K) "
                                 "steps) binned by n/H, capped by min(1, (n - H) / (K - 1)), flat beyond the measured "
                                 "range",
                                 trace_path, policy, info.requests, info.decode_steps, info.layers, Kt, info.n_min,
                                 info.n_max);
  if (rescaled)
    out.description_ += fmt::format("; rescaled from K={} to K={}: each H replayed at H x {} / {} (same H/K), the "
                                    "fraction applied at the same n/H",
                                    Kt, scenario_top_k, Kt, scenario_top_k);
  if (!out.unmeasured_.empty())
    out.description_ += fmt::format("; the trace never exceeds H = {} after the warm-up: there {}",
                                    join_sizes(out.unmeasured_), fallback.description());
  return out;
}

const MissCurve& MissCurves::curve(int32_t H) const {
  const auto it = by_h_.find(H);
  if (it == by_h_.end()) throw_error("miss curves: no replayed miss curve for buffer size {}", H);
  return it->second;
}

double MissCurves::fraction(int32_t H, int64_t n) const {
  if (n <= H) return 0.0;  // fast path
  switch (kind_) {
    case Kind::kSurface: return surface_->fraction(policy_, H, n, top_k_);
    case Kind::kConstant: return constant_;
    case Kind::kTrace: {
      const auto it = by_h_.find(H);
      if (it == by_h_.end()) return fallback_->fraction(H, n);
      return std::min(interpolate_ratio_curve(it->second.by_ratio, static_cast<double>(n) / H),
                      steady_miss_bound(H, n, top_k_));
    }
  }
  return 0.0;
}

bool MissCurves::extrapolated(int32_t H, int64_t n) const {
  if (n <= H) return false;
  switch (kind_) {
    case Kind::kSurface: return surface_->extrapolation(policy_, H, n, top_k_).any();
    case Kind::kConstant: return false;  // given, not read from data
    case Kind::kTrace: {
      const auto it = by_h_.find(H);
      if (it == by_h_.end()) return fallback_->extrapolated(H, n);
      const double r = static_cast<double>(n) / H;
      if (r >= it->second.ratio_min && r <= it->second.ratio_max) return false;
      const double recorded = r * it->second.replayed_H;  // the length at the trace's own K
      return recorded < static_cast<double>(trace_n_min_) || recorded > static_cast<double>(trace_n_max_);
    }
  }
  return false;
}

std::string MissCurves::measured_range(int32_t H) const {
  switch (kind_) {
    case Kind::kConstant: return "";
    case Kind::kSurface: {
      const std::vector<MissColumn>& cols = surface_->columns(policy_);
      const double hk = static_cast<double>(H) / top_k_;
      auto col = [](const MissColumn& c) {
        return fmt::format("H/K {:g} (n/H {:.3g}–{:.3g})", c.h_over_k, c.n_over_h_min, c.n_over_h_max);
      };
      const auto above = std::lower_bound(cols.begin(), cols.end(), hk,
                                          [](const MissColumn& c, double x) { return c.h_over_k < x; });
      std::string where;
      if (above == cols.end()) where = "its last column " + col(cols.back());
      else if (above->h_over_k == hk) where = "its column " + col(*above);
      else if (above == cols.begin()) where = "its first column " + col(*above);
      else where = "its columns " + col(*(above - 1)) + " and " + col(*above);
      return fmt::format("miss surface {}, {}", surface_->name, where);
    }
    case Kind::kTrace: {
      const auto it = by_h_.find(H);
      if (it == by_h_.end()) return "where the trace measured nothing, " + fallback_->measured_range(H);
      return fmt::format("the replayed trace's steady state at H {} (n/H {:.3g}–{:.3g}; it recorded n {}..{})", H,
                         it->second.ratio_min, it->second.ratio_max, trace_n_min_, trace_n_max_);
    }
  }
  return "";
}

MissCurves default_miss_curves(const Scenario& s, const std::string& policy) {
  return MissCurves::from_surface(load_miss_surface(default_miss_surface(s.deployment.hisparse.top_k)), policy,
                                 s.deployment.hisparse.top_k);
}

}  // namespace hisparse::sim
