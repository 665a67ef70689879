// @brief HoldoutSplit and compare_held_out (see miss_holdout.h).
#include "sim/miss/miss_holdout.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

bool HoldoutSplit::holds(const ReplayRequestRows& rr) const {
  if (rr.rows.empty() || rr.rows[0].empty() || rr.rows[0][0].empty()) return false;
  const auto& steps = rr.rows[0][0];  // every configuration and layer sees the same seq_lens
  const int64_t lo = steps.front().seq_len, hi = steps.back().seq_len;
  return std::any_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n >= lo && n <= hi; });
}

HoldoutReport compare_held_out(const MissFitter& train, const MissFitter& held_out) {
  HoldoutReport rep;
  for (const auto& [policy, cols] : held_out.columns()) {
    for (const MissColumn& c : cols) {
      if (c.steady.empty()) continue;
      const MissColumn t = train.column(policy, c.h_over_k);
      if (t.steady.empty()) {  // e.g. every training request has n <= H there: nothing to predict from
        rep.unpredicted.push_back(fmt::format("{} at H/K {:g}: no training steady sample", policy, c.h_over_k));
        continue;
      }
      for (const auto& [r, f] : c.steady) {
        HoldoutPoint p;
        p.policy = policy;
        p.h_over_k = c.h_over_k;
        p.n_over_h = r;
        p.measured = f;
        p.predicted = interpolate_ratio_curve(t.steady, r);
        p.extrapolated = r < t.n_over_h_min || r > t.n_over_h_max;
        rep.points.push_back(p);
      }
    }
  }
  if (rep.points.empty())
    throw_error("held-out check: no held-out steady-state point to compare (no request's n range holds a held-out "
                "length, none of its step-layers has n > H after the warm-up, or the training requests have none)");
  double sum = 0, sum_inside = 0;
  for (const HoldoutPoint& p : rep.points) {
    const double e = std::abs(p.predicted - p.measured);
    sum += e;
    rep.max_abs_error = std::max(rep.max_abs_error, e);
    if (p.extrapolated) continue;
    sum_inside += e;
    rep.max_abs_error_inside = std::max(rep.max_abs_error_inside, e);
    ++rep.inside;
  }
  rep.mean_abs_error = sum / static_cast<double>(rep.points.size());
  rep.mean_abs_error_inside = rep.inside > 0 ? sum_inside / static_cast<double>(rep.inside) : 0.0;
  return rep;
}

}  // namespace hisparse::sim
