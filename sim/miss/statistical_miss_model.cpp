// @brief Statistical miss model: expected misses by phase (first step, warm-up, steady curve in n/H), capped by the
// steady-state bound, rounded by carry (no RNG).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/miss/miss_surface.h"
#include "sim/miss/miss_model.h"

namespace hisparse::sim {
namespace {

class StatisticalMissModel final : public MissModel {
 public:
  explicit StatisticalMissModel(StatisticalMissParams p) : p_(std::move(p)) {
    if (p_.by_ratio.empty()) throw_error("statistical miss model: by_ratio needs at least one (n/H, fraction) point");
    for (size_t i = 0; i < p_.by_ratio.size(); ++i) {
      const auto& [r, f] = p_.by_ratio[i];
      if (!(f >= 0 && f <= 1)) throw_error("statistical miss model: fraction {} at n/H {} must be in [0, 1]", f, r);
      if (i > 0 && !(r > p_.by_ratio[i - 1].first))
        throw_error("statistical miss model: n/H points must ascend ({} after {})", r, p_.by_ratio[i - 1].first);
    }
    if (p_.H < p_.top_k) throw_error("statistical miss model: H ({}) must be >= top_k ({})", p_.H, p_.top_k);
    if (p_.warmup_steps < 0) throw_error("statistical miss model: warmup_steps {} must be >= 0", p_.warmup_steps);
    for (const auto& [name, f] : {std::pair<const char*, double>{"first_step_fraction", p_.first_step_fraction},
                                  {"warmup_fraction", p_.warmup_fraction}})
      if (!(f >= 0 && f <= 1)) throw_error("statistical miss model: {} {} must be in [0, 1]", name, f);
  }

  MissResult step(const MissQuery& q, double& carry) const override {
    MissResult out;
    const int64_t per_layer = std::min<int64_t>(q.n, p_.top_k);
    out.selected = per_layer * p_.layers;
    if (q.n <= p_.H) return out;  // fast path: everything resident
    // The bound assumes a full buffer; after an empty start it fills only during the warm-up, so there it is not
    // applied (step 0 then misses every non-newest selection by contract).
    const double bound = steady_miss_bound(p_.H, q.n, p_.top_k);
    double f;
    if (q.step == 0 && q.empty_start) f = p_.first_step_fraction;
    else if (p_.warmup_steps > 0 && q.step <= p_.warmup_steps)
      f = q.empty_start ? p_.warmup_fraction : std::min(p_.warmup_fraction, bound);
    else f = std::min(fraction(static_cast<double>(q.n) / p_.H), bound);
    // The newest token never misses (reserved slot), so at most per_layer - 1 entries per layer can.
    const double expected = static_cast<double>(per_layer - 1) * p_.layers * f + carry;
    out.misses = static_cast<int64_t>(std::floor(expected));
    carry = expected - static_cast<double>(out.misses);
    return out;
  }

  std::string describe() const override {
    std::string pts;
    for (const auto& [r, f] : p_.by_ratio) pts += fmt::format("{}({:.3g}:{:.4g})", pts.empty() ? "" : " ", r, f);
    const std::string warm = p_.warmup_steps > 0
                                 ? fmt::format(", warm-up {} steps {:.4g}", p_.warmup_steps, p_.warmup_fraction)
                                 : std::string();
    return fmt::format("statistical miss model: layers {}, K {}, H {}, first step {:.3g}{}, miss fraction by n/H "
                       "[{}]{}",
                       p_.layers, p_.top_k, p_.H, p_.first_step_fraction, warm, pts,
                       p_.fitted_from.empty() ? "" : ", fitted to " + p_.fitted_from);
  }

 private:
  double fraction(double ratio) const { return interpolate_ratio_curve(p_.by_ratio, ratio); }
  StatisticalMissParams p_;
};

}  // namespace

std::unique_ptr<MissModel> make_statistical_miss_model(const StatisticalMissParams& params) {
  return std::make_unique<StatisticalMissModel>(params);
}

}  // namespace hisparse::sim
