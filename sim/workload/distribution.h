// @brief A seeded draw of a length, a count or a duration, as a workload YAML names it (fixed, log-uniform,
// exponential, log-normal, geometric, a quantile table or a table of values and weights), and its strict reader.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/yaml_reader.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// Uniform double in [0, 1) from the top 53 bits: the same on every platform, unlike std distributions.
double uniform01(std::mt19937_64& rng);
/// An integer log-uniform in [lo, hi] (each decade as likely as the next: prompt lengths span several).
int32_t log_uniform_int(std::mt19937_64& rng, int32_t lo, int32_t hi);

struct Distribution {
  enum class Kind { kFixed, kLogUniform, kExponential, kLognormal, kGeometric, kQuantiles, kTable };
  Kind kind = Kind::kFixed;
  double value = 0;               // fixed
  double min = 0, max = 0;        // log_uniform: the range; every other kind: the draw is clamped to [min, max]
  double mean = 0;                // exponential; geometric (a count >= 1, P(k) = (1 - q) q^(k-1), mean 1 / (1 - q))
  double median = 0, sigma = 0;   // log-normal: exp(N(ln median, sigma^2))
  std::vector<std::pair<double, double>> points;  // quantiles: (probability, value), 0 first, 1 last, both increasing
  std::vector<double> values, weights;            // table: value i drawn with weight i / the sum

  /// One draw. Quantile tables interpolate between their points linearly in log(value) (lengths and times span
  /// decades; linearly where a point is 0).
  double draw(std::mt19937_64& rng) const;
  /// A draw rounded to the nearest integer, at least 1 (token counts, turns).
  int32_t draw_count(std::mt19937_64& rng) const;
  /// A fixed distribution of `v`.
  static Distribution fixed(double v);
};

/// Reads the distribution under `key` of `parent`: `{distribution: fixed|log_uniform|exponential|lognormal|geometric|
/// quantiles|table, …}`, or a plain number for a fixed one. Every value is in [lo, hi] of `unit` (plain numbers mean
/// the base unit; "2s" is accepted for nanoseconds); an error names the file, the key, the value and what was expected.
Distribution read_distribution(StrictMap& parent, const std::string& key, Unit unit, double lo, double hi);

/// The keys of a seeded Poisson arrival process in a workload YAML's root: `seed` (default 1), `rate` per second
/// (required) and `duration` (ns or "600s"; `*duration` holds the default and receives the value).
void read_poisson_arrivals(StrictMap& root, uint64_t* seed, double* rate_per_s, SimTime* duration);

}  // namespace hisparse::sim
