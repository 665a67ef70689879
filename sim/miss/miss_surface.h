// @brief MissSurface: the per-layer miss fraction of a swap-in policy as a function of what it depends on — the
// buffer-to-top-k ratio H/K, the sequence-to-buffer ratio n/H, and the phase of the request (first step, warm-up,
// steady state) — measured on recorded top-k traces (scenarios/miss_models/<name>.yaml, written by
// `hisparse fit-miss-model`, sim/miss/miss_fitter.h). The default miss model of `hisparse simulate` and `hisparse plan`.
//
// Fraction: Σ misses / Σ (selected − newest_hits) over step-layers with n > H (the newest token has a reserved slot
// and can never miss; n <= H is the fast path, where nothing misses).
//
// Phases of a request, by rule (not chosen per trace): step 0 is the first step; steps 1..W with W = ceil(H / K)
// are the warm-up, because each step replaces at most K rows of the buffer, so until then it may still hold rows
// the request never selected (the trace's initial state, or nothing); later steps are the steady state.
//
// Steady-state bound: a full buffer holds H of the request's rows, so at most n − H rows are not resident and at
// most min(1, max(0, n − H) / (K − 1)) of the K − 1 selections that can miss do miss (0 for K <= 1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/deployment_spec.h"
#include "core/swap_in_types.h"
#include "sim/miss/miss_model.h"

namespace hisparse::sim {

/// Name of the surface the simulator and the planner use by default below kLongTopK (scenarios/miss_models/
/// smollm2-real.yaml: SmolLM2-135M at K 256, n 6K..8K).
inline constexpr const char* kDefaultMissSurface = "smollm2-real";
/// The default from top_k kLongTopK on (DSA models: DeepSeek-V3.2 and GLM-5.x use K 2048): gemma3-270m-field.yaml,
/// the shape Gemma 3 270M's full-attention layers measure at K 2048 and n 16K..32K (covering their H/K and n/H at 16K
/// and 32K), its steady level calibrated to a published DeepSeek-V3.2 run (the file's provenance names the point).
inline constexpr const char* kDefaultLongMissSurface = "gemma3-270m-field";
inline constexpr int32_t kLongTopK = 1024;
/// The default surface for a deployment's top_k (kDefaultLongMissSurface from kLongTopK on, else kDefaultMissSurface).
const char* default_miss_surface(int32_t top_k);

using RatioCurve = std::vector<std::pair<double, double>>;  // (x, fraction), x strictly ascending

/// Linear interpolation of `curve` at `x`, flat beyond both ends (curve non-empty, x ascending).
double interpolate_ratio_curve(const RatioCurve& curve, double x);

/// W = ceil(H / K): the warm-up steps after a request's first step (0 when K < 1).
int32_t warmup_steps_for(int32_t H, int32_t K);

/// min(1, max(0, n − H) / (K − 1)); 0 when K <= 1 (no selection can miss).
double steady_miss_bound(int32_t H, int64_t n, int32_t K);

/// One measured buffer-to-top-k ratio of one policy.
struct MissColumn {
  double h_over_k = 1;
  double first_step = 1;          // fraction of step 0 (starting from the trace's initial buffer)
  int64_t first_step_samples = 0; // step-layers behind it
  double warmup = 1;              // fraction over steps 1..W
  int64_t warmup_samples = 0;
  RatioCurve steady;              // (n/H, fraction) after the warm-up, n/H ascending
  int64_t samples = 0;            // step-layers behind `steady`
  double n_over_h_min = 0, n_over_h_max = 0;  // n/H range of those samples
};

/// One trace a surface was fitted to (the `provenance:` of the YAML).
struct MissTraceInfo {
  std::string path;
  int32_t layers = 0;
  int32_t top_k = 0;
  InitialState initial_state = InitialState::kIdentity;
  int64_t requests = 0;
  int64_t decode_steps = 0;
  int32_t n_min = 0, n_max = 0;
};

/// A surface whose steady level was calibrated to published field measurements: the steady fractions in the file
/// are the measured ones times `steady_scale` (the shape in H/K and n/H stays the trace's; first-step and warm-up
/// fractions are not scaled). `fitted_to` names the field points (`run/point`, scenarios/field/) the scale was
/// fitted to, which `hisparse fidelity` then marks as fitted rather than held out.
struct MissCalibration {
  double steady_scale = 1;
  std::vector<std::string> fitted_to;
};

struct MissProvenance {
  std::string command;      // the exact command line that wrote the file
  std::string fraction;     // what a fraction is
  std::string warmup_rule;  // how first / warm-up / steady steps were told apart
  std::vector<MissTraceInfo> traces;
  std::optional<MissCalibration> calibration;  // absent: the fractions are as measured
};

/// Which part of a query lies outside what was measured.
struct MissExtrapolation {
  bool h_over_k = false;  // H/K below the first or above the last column
  bool n_over_h = false;  // n/H outside the measured range of a column it is read from
  bool any() const { return h_over_k || n_over_h; }
};

struct MissSurface {
  std::string name;
  std::string file;  // path it was loaded from ("" when fitted in memory)
  std::map<std::string, std::vector<MissColumn>> policies;  // policy → columns, h_over_k strictly ascending
  bool has_provenance = false;
  MissProvenance provenance;

  bool has_policy(const std::string& policy) const { return policies.count(policy) > 0; }
  /// Throws naming the file and the policies it has when `policy` is not one of them.
  const std::vector<MissColumn>& columns(const std::string& policy) const;

  /// Steady-state fraction at buffer size H, sequence length n, top-k K: 0 when n <= H; else linear in n/H within
  /// a column (flat beyond its ends), linear in H/K between columns (flat beyond both ends), capped by
  /// steady_miss_bound.
  double fraction(const std::string& policy, int32_t H, int64_t n, int32_t K) const;
  /// Warm-up and first-step fractions at H/K (linear between columns, flat beyond both ends).
  double warmup_fraction(const std::string& policy, int32_t H, int32_t K) const;
  double first_step_fraction(const std::string& policy, int32_t H, int32_t K) const;
  /// Whether fraction(policy, H, n, K) reads beyond the measured ranges (never on the fast path, n <= H).
  MissExtrapolation extrapolation(const std::string& policy, int32_t H, int64_t n, int32_t K) const;
  /// The steady curve at H/K as one list of (n/H, fraction) points (uncapped), exact between the two columns'
  /// points: the interpolation in H/K of two piecewise-linear curves breaks only where one of them does.
  RatioCurve steady_curve(const std::string& policy, double h_over_k) const;
  /// "name (file)" for reports.
  std::string label() const;
  /// How reports label misses read from this surface, `shown` naming it: "fitted (miss surface SHOWN, steady
  /// state)", or with a calibration "calibrated (miss surface SHOWN, steady state: measured × s, level fitted to P)".
  std::string source_label(const std::string& shown) const;
};

/// Scales every steady fraction of `surface` by `c.steady_scale` (capped at 1) and records `c` in its provenance.
void calibrate_steady_level(MissSurface& surface, const MissCalibration& c);

/// `name_or_path`: a name (<scenario dir>/miss_models/<name>.yaml, dirs as scenario_dirs()) or a path ending in
/// .yaml. Strict: throws hisparse::Error naming the file and the key or entry on an unknown or missing key, a
/// fraction outside [0, 1], H/K < 1 or not ascending, n/H not ascending.
MissSurface load_miss_surface(const std::string& name_or_path);

/// The YAML text load_miss_surface reads back (fixed precision, so the same fit writes the same bytes).
/// `header` lines become '# ' comments above the data.
std::string miss_surface_to_yaml(const MissSurface& surface, const std::vector<std::string>& header);

/// Digits after the point the writer keeps (fractions; n/H and H/K), and so what a round trip preserves.
inline constexpr int kFractionDigits = 6;
inline constexpr int kRatioDigits = 4;

/// Statistical-model parameters for `scenario` (layers, K, H from it): the steady curve and the warm-up fraction of
/// `surface` at the scenario's H/K, W = ceil(H/K) warm-up steps; the first step after an empty start misses every
/// non-newest selection (docs/swap_in.md: the buffer holds nothing).
StatisticalMissParams miss_params_from_surface(const Scenario& scenario, const MissSurface& surface,
                                               const std::string& policy);

/// The former default, kept as an explicitly named option (`--miss-model placeholder`): 10 % of the non-newest
/// selections miss on every slow-path step, whatever H/K. Not derived from any data.
StatisticalMissParams placeholder_miss_params(const Scenario& scenario);

}  // namespace hisparse::sim
