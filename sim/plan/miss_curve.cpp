// @brief Miss-fraction curves for the planner: statistical parameters as given, or fitted from one replay pass.
#include "sim/plan/miss_curve.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/buffer_miss_curve.h"
#include "sim/replay/replay_engine.h"
#include "traces/trace_source.h"

namespace hisparse::sim {

MissCurves MissCurves::statistical(const StatisticalMissParams& p) {
  if (p.by_ratio.empty()) throw_error("statistical miss model: by_ratio needs at least one (n/H, fraction) point");
  MissCurves c;
  c.shared_.by_ratio = p.by_ratio;
  std::string pts;
  for (const auto& [r, f] : p.by_ratio) pts += fmt::format("{}{:.3g}:{:.4g}", pts.empty() ? "" : " ", r, f);
  c.description_ = fmt::format("statistical miss model, miss fraction by n/H [{}]{}", pts,
                               p.fitted_from.empty() ? " (placeholder defaults of sim/serving_simulation; pass --trace "
                                                       "to replay a recorded top-k trace)"
                                                     : ", fitted to " + p.fitted_from);
  return c;
}

MissCurves MissCurves::from_trace(const std::string& trace_path, const std::string& policy,
                                  const std::vector<int32_t>& buffer_sizes, int64_t row_bytes, int threads,
                                  const StatisticalMissParams& fallback) {
  auto src = traces::open_trace(trace_path);
  const traces::TraceMeta meta = src->meta();
  for (int32_t H : buffer_sizes)
    if (H < meta.top_k)
      throw_error("plan: buffer size {} is below the trace's top_k {} ({}); drop it from --sweep-buffer-sizes", H,
                  meta.top_k, trace_path);
  ReplayOptions opt;
  opt.policies = {policy};
  opt.buffer_sizes = buffer_sizes;
  opt.row_bytes = row_bytes;
  opt.threads = std::max(1, threads);
  opt.keep_step_rows = true;
  // Same bins as fit_statistical_miss_model (sim/trace_miss_model.cpp), so both fits agree on a trace.
  static const double kEdges[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0, 1e9};
  const size_t nb = std::size(kEdges) - 1;
  struct Acc {
    std::vector<double> mis, usable, ratio_sum, count;
    double rmin = 1e300, rmax = 0;
    int64_t samples = 0;
  };
  std::vector<Acc> acc(buffer_sizes.size());
  for (auto& a : acc) a.mis.assign(nb, 0), a.usable.assign(nb, 0), a.ratio_sum.assign(nb, 0), a.count.assign(nb, 0);
  const bool empty_start = meta.initial_state == InitialState::kEmpty;
  auto sink = [&](const ReplayRequestRows& rr) {
    for (size_t c = 0; c < rr.rows.size() && c < acc.size(); ++c) {
      Acc& a = acc[c];
      const double H = buffer_sizes[c];
      for (const auto& layer : rr.rows[c]) {
        for (size_t s = 0; s < layer.size(); ++s) {
          const ReplayStepRow& row = layer[s];
          if (row.seq_len <= H) continue;
          // The first step after an empty start misses everything by contract: not the steady state planned for.
          if (empty_start && s < rr.steps.size() && rr.steps[s] == 0) continue;
          const double usable = row.selected - 1;  // the newest token never misses
          if (!(usable > 0)) continue;
          const double r = row.seq_len / H;
          size_t b = 0;
          while (b + 1 < nb && r >= kEdges[b + 1]) ++b;
          a.mis[b] += row.misses;
          a.usable[b] += usable;
          a.ratio_sum[b] += r;
          a.count[b] += 1;
          a.rmin = std::min(a.rmin, r);
          a.rmax = std::max(a.rmax, r);
          ++a.samples;
        }
      }
    }
  };
  const ReplayResult res = run_replay(*src, opt, sink);
  MissCurves out;
  out.from_trace_ = true;
  for (size_t c = 0; c < buffer_sizes.size(); ++c) {
    MissCurve mc;
    const Acc& a = acc[c];
    for (size_t b = 0; b < nb; ++b)
      if (a.usable[b] > 0) mc.by_ratio.emplace_back(a.ratio_sum[b] / a.count[b], std::clamp(a.mis[b] / a.usable[b], 0.0, 1.0));
    mc.slow_step_layers = a.samples;
    mc.ratio_min = a.samples > 0 ? a.rmin : 0;
    mc.ratio_max = a.rmax;
    if (c < res.configs.size()) mc.hit_rate = res.configs[c].hit_rate();
    if (mc.by_ratio.empty()) {
      // Charging zero misses past an H the trace never reached would flatter large buffers.
      mc.by_ratio = fallback.by_ratio;
      out.unmeasured_.push_back(buffer_sizes[c]);
    }
    out.by_h_[buffer_sizes[c]] = std::move(mc);
  }
  out.description_ = fmt::format("replayed top-k trace {} with policy {} ({} requests, {} decode steps, {} layers, "
                                 "top_k {}); miss fraction binned by n/H, flat beyond the measured range",
                                 trace_path, policy, res.requests, res.decode_steps, meta.layers, meta.top_k);
  if (!out.unmeasured_.empty()) {
    std::string hs;
    for (int32_t H : out.unmeasured_) hs += fmt::format("{}{}", hs.empty() ? "" : ", ", H);
    out.description_ += fmt::format("; the trace never exceeds H = {}: there the statistical fraction applies", hs);
  }
  return out;
}

const MissCurve& MissCurves::curve(int32_t H) const {
  if (!from_trace_) return shared_;
  const auto it = by_h_.find(H);
  if (it == by_h_.end()) throw_error("plan: no replayed miss curve for buffer size {}", H);
  return it->second;
}

double MissCurves::fraction(int32_t H, int64_t n) const {
  const auto& v = curve(H).by_ratio;
  return v.empty() ? 0.0 : interpolate_ratio_curve(v, static_cast<double>(n) / H);
}

}  // namespace hisparse::sim
