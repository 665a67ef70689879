// @brief Seeded draws from the distributions a workload YAML names, and their strict reader (distribution.h).
#include "sim/workload/distribution.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace hisparse::sim {
namespace {

constexpr double kPi = 3.14159265358979323846;

// One number of a YAML list: a scalar with an optional unit, within [lo, hi]; else an error naming where it is.
double list_number(const YAML::Node& n, const std::string& where, Unit unit, double lo, double hi) {
  double v = 0;
  if (!n.IsScalar() || !parse_quantity(n.Scalar(), unit, &v) || !(v >= lo && v <= hi))
    throw_error("{}: got '{}', expected a number in [{}, {}]", where, n.IsScalar() ? n.Scalar() : "a list or map", lo,
                hi);
  return v;
}

void read_quantile_points(StrictMap& m, Distribution& d, Unit unit, double lo, double hi) {
  m.require("points");
  const YAML::Node pts = m.sequence("points");
  const std::string where = m.where("points");
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!pts[i].IsSequence() || pts[i].size() != 2)
      throw_error("{}: expected a pair [probability, value]", at);
    const double p = list_number(pts[i][0], at + "[0]", Unit::kNone, 0, 1);
    const double v = list_number(pts[i][1], at + "[1]", unit, lo, hi);
    if (!d.points.empty() && (p <= d.points.back().first || v < d.points.back().second))
      throw_error("{}: got [{}, {}] after [{}, {}], expected probabilities increasing and values not decreasing", at,
                  p, v, d.points.back().first, d.points.back().second);
    d.points.emplace_back(p, v);
  }
  if (d.points.size() < 2 || d.points.front().first != 0 || d.points.back().first != 1)
    throw_error("{}: expected at least two points, the first at probability 0 and the last at 1", where);
}

void read_table(StrictMap& m, Distribution& d, Unit unit, double lo, double hi) {
  m.require("values");
  m.require("weights");
  const YAML::Node values = m.sequence("values"), weights = m.sequence("weights");
  const std::string wv = m.where("values"), ww = m.where("weights");
  if (values.size() == 0 || values.size() != weights.size())
    throw_error("{}: got {} values and {} weights, expected as many of each, at least one", wv, values.size(),
                weights.size());
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    d.values.push_back(list_number(values[i], fmt::format("{}[{}]", wv, i), unit, lo, hi));
    d.weights.push_back(list_number(weights[i], fmt::format("{}[{}]", ww, i), Unit::kNone, 0, 1e18));
    total += d.weights.back();
  }
  if (!(total > 0)) throw_error("{}: the weights sum to 0, expected a positive sum", ww);
}

double quantile_draw(const std::vector<std::pair<double, double>>& pts, double u) {
  size_t i = 1;
  while (i + 1 < pts.size() && pts[i].first <= u) ++i;
  const auto& [p0, v0] = pts[i - 1];
  const auto& [p1, v1] = pts[i];
  const double f = (u - p0) / (p1 - p0);
  if (v0 > 0 && v1 > 0) return std::exp(std::log(v0) + f * (std::log(v1) - std::log(v0)));
  return v0 + f * (v1 - v0);
}

}  // namespace

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int32_t log_uniform_int(std::mt19937_64& rng, int32_t lo, int32_t hi) {
  if (lo == hi) return lo;
  const double v = std::exp(std::log(lo) + uniform01(rng) * (std::log(hi + 1.0) - std::log(lo)));
  return std::clamp(static_cast<int32_t>(std::floor(v)), lo, hi);
}

Distribution Distribution::fixed(double v) {
  Distribution d;
  d.value = d.min = d.max = v;
  return d;
}

double Distribution::draw(std::mt19937_64& rng) const {
  double v = value;
  switch (kind) {
    case Kind::kFixed: break;
    case Kind::kLogUniform: v = std::exp(std::log(min) + uniform01(rng) * (std::log(max) - std::log(min))); break;
    case Kind::kExponential: v = -mean * std::log(1.0 - uniform01(rng)); break;
    case Kind::kLognormal: {  // Box-Muller: one standard normal from two uniforms
      const double u1 = uniform01(rng), u2 = uniform01(rng);
      v = median * std::exp(sigma * std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * kPi * u2));
      break;
    }
    case Kind::kGeometric: {
      const double u = uniform01(rng);
      v = mean <= 1.0 ? 1.0 : 1.0 + std::floor(std::log(1.0 - u) / std::log(1.0 - 1.0 / mean));
      break;
    }
    case Kind::kQuantiles: v = quantile_draw(points, uniform01(rng)); break;
    case Kind::kTable: {
      double total = 0;
      for (double w : weights) total += w;
      double x = uniform01(rng) * total;
      size_t i = 0;
      while (i + 1 < values.size() && x >= weights[i]) x -= weights[i++];
      v = values[i];
      break;
    }
  }
  return std::clamp(v, min, max);
}

int32_t Distribution::draw_count(std::mt19937_64& rng) const {
  const double v = std::llround(draw(rng));
  return static_cast<int32_t>(std::clamp(v, 1.0, static_cast<double>(std::numeric_limits<int32_t>::max())));
}

Distribution read_distribution(StrictMap& parent, const std::string& key, Unit unit, double lo, double hi) {
  if (!parent.is_map(key)) {
    double v = 0;
    parent.get(key, &v, lo, hi, unit);
    return Distribution::fixed(v);
  }
  StrictMap m = parent.child(key);
  Distribution d;
  d.min = lo;
  d.max = hi;
  std::string kind;
  m.require("distribution");
  m.get_choice("distribution", &kind,
               {"fixed", "log_uniform", "exponential", "lognormal", "geometric", "quantiles", "table"});
  const auto need = [&](const char* k, double* out, double klo, double khi, Unit u) {
    m.require(k);
    m.get(k, out, klo, khi, u);
  };
  if (kind == "fixed") {
    need("value", &d.value, lo, hi, unit);
    d.min = d.max = d.value;
  } else if (kind == "log_uniform") {
    d.kind = Distribution::Kind::kLogUniform;
    need("min", &d.min, std::max(lo, 1e-300), hi, unit);
    need("max", &d.max, std::max(lo, 1e-300), hi, unit);
    if (d.max < d.min) throw_error("{}: got max {} below min {}, expected min <= max", m.where("max"), d.max, d.min);
  } else if (kind == "exponential") {
    d.kind = Distribution::Kind::kExponential;
    need("mean", &d.mean, lo, hi, unit);
  } else if (kind == "lognormal") {
    d.kind = Distribution::Kind::kLognormal;
    need("median", &d.median, std::max(lo, 1e-300), hi, unit);
    need("sigma", &d.sigma, 0, 10, Unit::kNone);
  } else if (kind == "geometric") {
    d.kind = Distribution::Kind::kGeometric;
    need("mean", &d.mean, 1, 1e9, Unit::kNone);
  } else if (kind == "quantiles") {
    d.kind = Distribution::Kind::kQuantiles;
    read_quantile_points(m, d, unit, lo, hi);
  } else {
    d.kind = Distribution::Kind::kTable;
    read_table(m, d, unit, lo, hi);
  }
  if (kind != "fixed" && kind != "log_uniform") {  // an optional clamp of the draw
    m.get("min", &d.min, lo, hi, unit);
    m.get("max", &d.max, lo, hi, unit);
    if (d.max < d.min) throw_error("{}: got max {} below min {}, expected min <= max", m.where("max"), d.max, d.min);
  }
  m.finish();
  return d;
}

void read_poisson_arrivals(StrictMap& root, uint64_t* seed, double* rate_per_s, SimTime* duration) {
  int64_t v = 1;
  root.get("seed", &v, 0, std::numeric_limits<int64_t>::max());
  *seed = static_cast<uint64_t>(v);
  root.require("rate");
  root.get("rate", rate_per_s, 1e-9, 1e9);
  root.get_integral("duration", duration, 1, int64_t{1} << 62, Unit::kNanoseconds);
}

}  // namespace hisparse::sim
