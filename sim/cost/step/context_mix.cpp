// @brief ContextMix helpers and the decode-time-weighted mix of a workload (see context_mix.h).
#include "sim/cost/step/context_mix.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {

ContextMix ContextMix::single(int64_t seq_len) {
  ContextMix m;
  m.classes = {ContextClass{seq_len, 1.0}};
  m.label = fmt::format("{}", seq_len);
  return m;
}

double ContextMix::mean_seq_len() const {
  return expect([](int64_t n) { return static_cast<double>(n); });
}

void ContextMix::validate(const std::string& where) const {
  if (classes.empty()) throw_error("{}: the context-length mix holds no length", where);
  double sum = 0;
  for (const auto& c : classes) {
    if (c.seq_len < 1) throw_error("{}: sequence length {} (expected >= 1)", where, c.seq_len);
    if (!(c.weight >= 0)) throw_error("{}: weight {} of length {} (expected >= 0)", where, c.weight, c.seq_len);
    sum += c.weight;
  }
  if (std::fabs(sum - 1.0) > 1e-9) throw_error("{}: the mix's weights sum to {} (expected 1)", where, sum);
}

ContextMix decode_context_mix(const std::vector<std::pair<int64_t, int64_t>>& io, int points, int max_classes,
                              std::string label) {
  if (points < 1 || max_classes < 1) throw_error("decode_context_mix: points {} and classes {} must be >= 1", points, max_classes);
  std::vector<std::pair<double, double>> samples;  // (length, weight)
  for (const auto& [in, out] : io) {
    if (in < 0 || out < 1) continue;  // a request that decodes nothing never sits in a decode batch
    for (int j = 0; j < points; ++j) {
      const double n = static_cast<double>(in) + static_cast<double>(out) * (j + 0.5) / points;
      samples.emplace_back(n, static_cast<double>(out) / points);
    }
  }
  if (samples.empty()) throw_error("{}: no request with output tokens to build a decode mix from", label);
  return context_mix_from_samples(std::move(samples), max_classes, std::move(label));
}

ContextMix context_mix_from_samples(std::vector<std::pair<double, double>> samples, int max_classes, std::string label) {
  if (max_classes < 1) throw_error("{}: {} length classes (expected >= 1)", label, max_classes);
  double total = 0;
  for (const auto& [n, w] : samples) {
    if (!(w > 0) || !(n >= 1)) throw_error("{}: length sample ({}, weight {}) (expected length >= 1, weight > 0)", label, n, w);
    total += w;
  }
  if (samples.empty()) throw_error("{}: no length to build a context mix from", label);
  std::sort(samples.begin(), samples.end());
  ContextMix m;
  m.label = std::move(label);
  // Equal-weight quantile classes: class c takes the samples whose cumulative weight falls in [c, c+1) / classes.
  size_t i = 0;
  double cum = 0;
  for (int c = 0; c < max_classes && i < samples.size(); ++c) {
    const double upper = total * (c + 1) / max_classes;
    double w = 0, wn = 0;
    while (i < samples.size() && (cum + samples[i].second <= upper * (1 + 1e-12) || c + 1 == max_classes)) {
      w += samples[i].second;
      wn += samples[i].second * samples[i].first;
      cum += samples[i].second;
      ++i;
    }
    // The tolerance keeps an exact mean such as 4125 from rounding up on floating-point noise.
    if (w > 0) m.classes.push_back(ContextClass{static_cast<int64_t>(std::ceil(wn / w - 1e-6)), w / total});
  }
  // Weights as computed sum to 1 up to rounding; make it exact so validate() holds.
  double sum = 0;
  for (const auto& c : m.classes) sum += c.weight;
  for (auto& c : m.classes) c.weight /= sum;
  return m;
}

}  // namespace hisparse::sim
