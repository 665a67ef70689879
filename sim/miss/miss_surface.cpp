// @brief Evaluating a MissSurface: interpolation in n/H within a column and in H/K between columns, the fast path
// and the steady-state bound; turning it into the statistical model's parameters.
#include "sim/miss/miss_surface.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

const char* default_miss_surface(int32_t top_k) {
  return top_k >= kLongTopK ? kDefaultLongMissSurface : kDefaultMissSurface;
}
namespace {

// Relative slack when comparing a query's ratio with a measured end: H/K and n/H are quotients of integers, and a
// value on the edge must not count as extrapolated because of the last bit.
constexpr double kRangeSlack = 1e-9;

/// The columns a query at H/K = x reads, with their weights (one column at or beyond the ends, else two).
struct ColumnPair {
  const MissColumn* lo = nullptr;
  const MissColumn* hi = nullptr;
  double t = 0;  // weight of hi
};

ColumnPair bracket(const std::vector<MissColumn>& cols, double x) {
  ColumnPair p;
  if (x <= cols.front().h_over_k) {
    p.lo = p.hi = &cols.front();
    return p;
  }
  if (x >= cols.back().h_over_k) {
    p.lo = p.hi = &cols.back();
    return p;
  }
  const auto hi = std::upper_bound(cols.begin(), cols.end(), x,
                                   [](double v, const MissColumn& c) { return v < c.h_over_k; });
  p.hi = &*hi;
  p.lo = &*(hi - 1);
  p.t = (x - p.lo->h_over_k) / (p.hi->h_over_k - p.lo->h_over_k);
  return p;
}

double ratio(int64_t a, int64_t b) { return static_cast<double>(a) / static_cast<double>(std::max<int64_t>(1, b)); }

}  // namespace

double interpolate_ratio_curve(const RatioCurve& v, double x) {
  if (v.empty()) throw_error("interpolate_ratio_curve: empty curve");
  if (x <= v.front().first) return v.front().second;
  if (x >= v.back().first) return v.back().second;
  const auto hi = std::upper_bound(v.begin(), v.end(), x, [](double a, const auto& p) { return a < p.first; });
  const auto lo = hi - 1;
  const double t = (x - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

int32_t warmup_steps_for(int32_t H, int32_t K) {
  if (K < 1) return 0;
  return static_cast<int32_t>((static_cast<int64_t>(H) + K - 1) / K);
}

double steady_miss_bound(int32_t H, int64_t n, int32_t K) {
  if (K <= 1) return 0.0;
  const double nonresident = static_cast<double>(std::max<int64_t>(0, n - H));
  return std::min(1.0, nonresident / static_cast<double>(K - 1));
}

const std::vector<MissColumn>& MissSurface::columns(const std::string& policy) const {
  const auto it = policies.find(policy);
  if (it == policies.end() || it->second.empty()) {
    std::vector<std::string> names;
    for (const auto& kv : policies) names.push_back(kv.first);
    throw_error("miss surface {} has no columns for policy '{}'; it has: {}", label(), policy,
                names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
  }
  return it->second;
}

double MissSurface::fraction(const std::string& policy, int32_t H, int64_t n, int32_t K) const {
  if (n <= H) return 0.0;  // fast path: every row is resident
  const ColumnPair p = bracket(columns(policy), ratio(H, K));
  const double r = ratio(n, H);
  const double lo = interpolate_ratio_curve(p.lo->steady, r);
  const double hi = interpolate_ratio_curve(p.hi->steady, r);
  return std::min((1 - p.t) * lo + p.t * hi, steady_miss_bound(H, n, K));
}

double MissSurface::warmup_fraction(const std::string& policy, int32_t H, int32_t K) const {
  const ColumnPair p = bracket(columns(policy), ratio(H, K));
  return (1 - p.t) * p.lo->warmup + p.t * p.hi->warmup;
}

double MissSurface::first_step_fraction(const std::string& policy, int32_t H, int32_t K) const {
  const ColumnPair p = bracket(columns(policy), ratio(H, K));
  return (1 - p.t) * p.lo->first_step + p.t * p.hi->first_step;
}

MissExtrapolation MissSurface::extrapolation(const std::string& policy, int32_t H, int64_t n, int32_t K) const {
  MissExtrapolation e;
  if (n <= H) return e;  // the fast path is exact, not a reading of the data
  const std::vector<MissColumn>& cols = columns(policy);
  const double x = ratio(H, K), r = ratio(n, H);
  e.h_over_k = x < cols.front().h_over_k * (1 - kRangeSlack) || x > cols.back().h_over_k * (1 + kRangeSlack);
  const ColumnPair p = bracket(cols, x);
  auto outside = [r](const MissColumn* c) {
    return r < c->n_over_h_min * (1 - kRangeSlack) || r > c->n_over_h_max * (1 + kRangeSlack);
  };
  // Only a column the value is read from (non-zero weight) counts.
  e.n_over_h = (p.t < 1 && outside(p.lo)) || (p.t > 0 && outside(p.hi));
  return e;
}

RatioCurve MissSurface::steady_curve(const std::string& policy, double h_over_k) const {
  const ColumnPair p = bracket(columns(policy), h_over_k);
  if (p.lo == p.hi || p.t == 0) return p.lo->steady;  // on a column: its own points
  std::vector<double> xs;
  for (const auto& pt : p.lo->steady) xs.push_back(pt.first);
  for (const auto& pt : p.hi->steady) xs.push_back(pt.first);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  RatioCurve out;
  for (double r : xs)
    out.emplace_back(r, (1 - p.t) * interpolate_ratio_curve(p.lo->steady, r) +
                            p.t * interpolate_ratio_curve(p.hi->steady, r));
  return out;
}

std::string MissSurface::label() const { return file.empty() ? name : fmt::format("{} ({})", name, file); }

void calibrate_steady_level(MissSurface& surface, const MissCalibration& c) {
  for (auto& [policy, cols] : surface.policies)
    for (MissColumn& col : cols)
      for (auto& point : col.steady) point.second = std::min(1.0, point.second * c.steady_scale);
  surface.provenance.calibration = c;
}

std::string MissSurface::source_label(const std::string& shown) const {
  if (!provenance.calibration) return fmt::format("fitted (miss surface {}, steady state)", shown);
  const MissCalibration& c = *provenance.calibration;
  return fmt::format("calibrated (miss surface {}, steady state: measured × {:g}, level fitted to {})", shown,
                     c.steady_scale, fmt::join(c.fitted_to, ", "));
}

StatisticalMissParams miss_params_from_surface(const Scenario& s, const MissSurface& surface,
                                               const std::string& policy) {
  StatisticalMissParams p;
  p.layers = s.model.offload_layers();
  p.top_k = s.deployment.hisparse.top_k;
  p.H = s.deployment.hisparse.device_buffer_size;
  const double h_over_k = ratio(p.H, p.top_k);
  p.by_ratio = surface.steady_curve(policy, h_over_k);
  p.warmup_steps = warmup_steps_for(p.H, p.top_k);
  p.warmup_fraction = surface.warmup_fraction(policy, p.H, p.top_k);
  p.first_step_fraction = 1.0;  // an empty buffer holds nothing: every non-newest selection misses
  p.fitted_from = fmt::format("miss surface {}, policy {}, at H/K {:.4g} (steady state capped by min(1, (n - H) / "
                              "(K - 1)))",
                              surface.label(), policy, h_over_k);
  if (surface.provenance.calibration)
    p.fitted_from += fmt::format("; steady level calibrated: measured × {:g}, fitted to {}",
                                 surface.provenance.calibration->steady_scale,
                                 fmt::join(surface.provenance.calibration->fitted_to, ", "));
  return p;
}

StatisticalMissParams placeholder_miss_params(const Scenario& s) {
  StatisticalMissParams p;
  p.layers = s.model.offload_layers();
  p.top_k = s.deployment.hisparse.top_k;
  p.H = s.deployment.hisparse.device_buffer_size;
  p.by_ratio = {{1.0, 0.10}};
  p.fitted_from = "placeholder (10 % once n > H, not derived from data)";
  return p;
}

}  // namespace hisparse::sim
