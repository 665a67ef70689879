// @brief BufferMissCurve: per-layer miss fraction on slow-path steps as a function of H/K, measured once on real
// top-k traces (scenarios/miss_models/<name>.yaml, written by scripts/fit_miss_model.py); the simulator's default.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/miss_model.h"

namespace hisparse::sim {

/// Name of the curve `default_miss_params` uses (scenarios/miss_models/smollm2-real.yaml).
inline constexpr const char* kDefaultMissCurve = "smollm2-real";

using RatioCurve = std::vector<std::pair<double, double>>;  // (H/K, miss fraction), H/K strictly ascending

struct BufferMissCurve {
  std::string name;
  std::string file;                            // path it was loaded from
  int32_t top_k = 0;                           // K of the trace the curves were measured on
  std::map<std::string, RatioCurve> curves;    // swap-in policy → curve (what the simulator uses)
  std::map<std::string, RatioCurve> reference; // other data (other K, steady state): kept for reports and tests

  /// Fraction of `policy` at buffer-to-top-k ratio `h_over_k`: linear between points, flat beyond both ends.
  /// Throws naming the file and the policies it has when `policy` is not one of them.
  double fraction(const std::string& policy, double h_over_k) const;
};

/// `name_or_path`: a name (<scenario dir>/miss_models/<name>.yaml, dirs as scenario_dirs()) or a path ending in
/// .yaml. Throws hisparse::Error naming file and key on a missing file, unknown key, non-ascending H/K, H/K < 1
/// or a fraction outside [0, 1].
BufferMissCurve load_buffer_miss_curve(const std::string& name_or_path);

/// Linear interpolation of `curve` at `x`, flat beyond both ends (curve non-empty, x ascending).
double interpolate_ratio_curve(const RatioCurve& curve, double x);

/// Statistical-model parameters for `scenario` (layers, K, H from it) with the constant fraction
/// `curve.fraction(policy, H / K)` on every slow-path step.
StatisticalMissParams miss_params_from_curve(const Scenario& scenario, const BufferMissCurve& curve,
                                             const std::string& policy);

/// The former default, kept as an explicitly named option (`--miss-model placeholder`): 10 % of the non-newest
/// selections miss on every slow-path step, whatever H/K. Not derived from any data.
StatisticalMissParams placeholder_miss_params(const Scenario& scenario);

}  // namespace hisparse::sim
