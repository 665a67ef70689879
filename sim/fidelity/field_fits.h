// @brief The suite's fits (scenarios/field/fits.yaml, docs/fidelity.md): every parameter some field point was used
// to set — a cost term, a miss surface's steady level, a field file's override — with where its value lives, the
// points that fit it, the range searched and the value it takes when no point is left to fit it (the prior). The
// search is bisection for the root of the named points' mean signed error, so `hisparse fidelity --fit` re-derives
// each value from the points alone, and `--write` puts it back where it lives.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hisparse::sim {

enum class FitKind {
  kCostTerm,         // a time-valued term of a cost-model file, in us
  kMissSteadyScale,  // a miss surface's calibration.steady_scale (its steady fractions are measured × it)
  kFieldOverride,    // a numeric key under a field file's overrides:
  kEfficiencyScale,  // a cost-model file's efficiency_scale (its every efficiency is the file's value × it)
};
const char* to_string(FitKind kind);
/// True for the kinds whose value is a term of a cost-model file (a `term: {value: ...}` block there).
inline bool in_cost_file(FitKind kind) { return kind == FitKind::kCostTerm || kind == FitKind::kEfficiencyScale; }

struct FieldFit {
  std::string parameter;             // the cost term, the override key, steady_scale or efficiency_scale
  FitKind kind = FitKind::kCostTerm;
  std::string file;                  // where the value lives, resolved against the fits file's folder
  std::vector<std::string> points;   // "run/point" the value is fitted to
  double lo = 0, hi = 0;             // the range searched
  double resolution = 0;             // the search stops within it; the value is rounded to it
  std::optional<double> prior;       // without any point (unset: an override then removed, the model's own value)
  std::string prior_reason;
  std::string fits_file;
  int line = 0;                      // of the fit's entry in fits_file
  /// "parameter (file)" for reports and errors.
  std::string label() const;
};

/// Reads a fits file strictly: unknown keys, a range that is not lo < hi, a resolution <= 0 or beyond the range, a
/// point not written run/point, a cost-term fit of a term that is not a time: errors naming file, key and line.
std::vector<FieldFit> load_field_fits(const std::string& path);

/// The value as its file holds it now (cost terms in us; an override absent from the file: nullopt).
std::optional<double> read_fitted_value(const FieldFit& fit);

/// `value` rounded to the fit's resolution, as written and reported.
double round_to_resolution(const FieldFit& fit, double value);
std::string fitted_value_text(const FieldFit& fit, std::optional<double> value);

struct FitSearch {
  double value = 0;       // the refit, rounded to the resolution
  int evaluations = 0;    // of the mean error
  bool at_bound = false;  // the mean error kept one sign over the range: the nearer bound
};

/// Bisection for the root of `mean_error` (signed, the named points' mean error; monotone in the parameter for every
/// shipped fit) over [lo, hi]: halves until the bracket is narrower than the resolution (at most 60 halvings) or
/// the error is exactly 0 (a published range, an integer capacity); the end of the last bracket with the smaller
/// |error| is the refit. Without a sign change the bound with the smaller |error| is, and at_bound says so.
FitSearch fit_by_bisection(const FieldFit& fit, const std::function<double(double)>& mean_error);

/// `text` (of the fit's file) with the value set where it lives: a cost term's `value:` line (or its bare value),
/// an override's line under `overrides:`; its unit and trailing comment kept. Throws naming the file and the key when
/// the line is not there or the fit is a miss level (regenerated from its trace, not edited: see the message).
std::string with_fitted_value(const std::string& text, const FieldFit& fit, double value);

/// One fit as `hisparse fidelity` reports it.
struct FitResult {
  FieldFit fit;
  std::optional<double> file_value;  // as the file holds it
  double refit = 0;                  // the suite's own value from the named points
  double file_error = 0, refit_error = 0;  // the points' mean signed error at each
  int evaluations = 0;
  bool at_bound = false;
  bool kept = false;                 // the file's value already minimises the error within rounding, so kept
  bool applies = true;               // false when a named run is not loaded (a --field subset)
};

/// A fitted value the search would move by more than its resolution (for --check): "" when the file is the refit.
std::string fit_drift(const FitResult& r);

}  // namespace hisparse::sim
