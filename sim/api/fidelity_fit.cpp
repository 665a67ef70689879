// @brief fits_file_of, apply_field_fits and evaluate_setup_ranges (see fidelity_fit.h).
#include "sim/api/fidelity_fit.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"

namespace hisparse::sim {

namespace fs = std::filesystem;

namespace {

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

/// The file a fit's value lives in, as a run reads it.
std::string file_read_by(const RunResult& run, FitKind kind) {
  switch (kind) {
    case FitKind::kCostTerm:
    case FitKind::kEfficiencyScale: return run.cost_terms_file;
    case FitKind::kMissSteadyScale: return run.miss_surface_file;
    case FitKind::kFieldOverride: return run.run.file;
  }
  return "";
}

/// One evaluation with some fits at trial values (nullopt: an override removed): the scored in-fit error of each of
/// `points` ("run/point"), each on the figure it is scored on: the plan's, or the serving run's for a run scored on
/// simulate (only those runs are served: the other fits are of the plan's figures).
class TrialRunner {
 public:
  TrialRunner(const FidelityRequest& r, const std::vector<FieldRun>& runs, const std::vector<RunResult>& base)
      : request_(r), runs_(runs), base_(base) {}

  std::map<std::string, double> errors(const std::vector<std::pair<const FieldFit*, std::optional<double>>>& values,
                                       const std::set<std::string>& points) const {
    FieldTrial trial;
    trial.points = points;
    trial.serve_simulate_scored_only = true;
    std::vector<FieldRun> runs = runs_;
    for (const auto& [fit, value] : values)
      for (size_t i = 0; i < runs.size(); ++i) {
        const RunResult* loaded = base_of(runs[i].name);
        if (!loaded || !same_file(file_read_by(*loaded, fit->kind), fit->file)) continue;
        switch (fit->kind) {
          case FitKind::kCostTerm:
            trial.cost_terms[runs[i].name].emplace_back(fit->parameter, static_cast<SimTime>(std::llround(*value * 1e3)));
            break;
          case FitKind::kMissSteadyScale:
            trial.miss_steady_scale[runs[i].name] = *value;
            break;
          case FitKind::kEfficiencyScale:
            trial.efficiency_scale[runs[i].name] = *value;
            break;
          case FitKind::kFieldOverride: {
            YAML::Node o = runs[i].overrides ? YAML::Clone(runs[i].overrides) : YAML::Node(YAML::NodeType::Map);
            if (value) {
              // Integral keys (pool sizes, counts) are written as integers, as a file would hold them.
              const double v = *value;
              o[fit->parameter] = v == std::round(v) ? fmt::format("{:.0f}", v) : fmt::format("{:.6g}", v);
            } else {
              o.remove(fit->parameter);
            }
            runs[i].overrides = o;
            break;
          }
        }
      }
    std::map<std::string, double> out;
    for (const RunResult& run : evaluate_field_runs(request_, runs, trial))
      for (const PointResult& p : run.points) out[run.run.name + "/" + p.point.id] = p.error_pct;
    return out;
  }

  double mean_error(const FieldFit& fit, double value, const std::vector<std::string>& points) const {
    const std::map<std::string, double> e = errors({{&fit, value}}, {points.begin(), points.end()});
    double sum = 0;
    for (const std::string& p : points) sum += e.at(p);
    return sum / static_cast<double>(points.size());
  }

  const RunResult* base_of(const std::string& run) const {
    for (const RunResult& r : base_)
      if (r.run.name == run) return &r;
    return nullptr;
  }

 private:
  FidelityRequest request_;
  const std::vector<FieldRun>& runs_;
  const std::vector<RunResult>& base_;
};

/// A fit's points must be loaded points of runs that read its file.
bool check_fit_points(const FieldFit& fit, const TrialRunner& t) {
  bool all_loaded = true;
  for (const std::string& id : fit.points) {
    const std::string run = id.substr(0, id.find('/')), point = id.substr(id.find('/') + 1);
    const RunResult* r = t.base_of(run);
    if (!r) {
      all_loaded = false;
      continue;
    }
    if (std::none_of(r->run.points.begin(), r->run.points.end(), [&](const FieldPoint& p) { return p.id == point; }))
      throw_error("{}: fit of {} (line {}): point {}: {} has no point '{}'", fit.fits_file, fit.parameter, fit.line, id,
                  r->run.file, point);
    if (!same_file(file_read_by(*r, fit.kind), fit.file))
      throw_error("{}: fit of {} (line {}): point {}: run {} reads {}, not {}", fit.fits_file, fit.parameter, fit.line,
                  id, run, file_read_by(*r, fit.kind).empty() ? std::string("none") : file_read_by(*r, fit.kind),
                  fit.file);
  }
  return all_loaded;
}

/// Every value a loaded run marks fitted (a cost term of kind fitted, a calibrated surface, a derived override) is
/// one the fits file declares, with the same points: otherwise the suite would carry a fit it cannot redo.
void check_declared(const std::vector<FieldFit>& fits, const std::vector<RunResult>& runs, const std::string& file) {
  const auto loaded = [&](const std::string& point) {
    return std::any_of(runs.begin(), runs.end(),
                       [&](const RunResult& r) { return point.rfind(r.run.name + "/", 0) == 0; });
  };
  for (const RunResult& run : runs)
    for (const FittedPoint& f : run.fitted_points) {
      if (!loaded(f.point)) continue;  // fitted to a run of another field set
      FitKind kind = FitKind::kCostTerm;
      std::string parameter = f.term;
      if (f.term.rfind("override ", 0) == 0) {
        kind = FitKind::kFieldOverride;
        parameter = f.term.substr(9);
      } else if (f.term == "miss surface level") {
        kind = FitKind::kMissSteadyScale;
        parameter = "steady_scale";
      } else if (f.term == kEfficiencyScaleTerm) {
        kind = FitKind::kEfficiencyScale;
      }
      const auto it = std::find_if(fits.begin(), fits.end(), [&](const FieldFit& g) {
        return g.kind == kind && g.parameter == parameter && same_file(g.file, file_read_by(run, kind));
      });
      if (it == fits.end())
        throw_error("{}: {} of {} is fitted to {} ({}), but no fit of it is declared here", file, parameter,
                    file_read_by(run, kind), f.point, run.run.file);
      if (std::find(it->points.begin(), it->points.end(), f.point) == it->points.end())
        throw_error("{}: fit of {} (line {}) does not name {}, which {} says it was fitted to", file, parameter,
                    it->line, f.point, file_read_by(run, kind));
    }
}

}  // namespace

std::string fits_file_of(const std::string& choice, const std::vector<std::string>& field) {
  if (choice == "none") return "";
  if (choice != "auto") {
    if (!fs::is_regular_file(choice)) throw_error("fidelity: --fits {}: no such file", choice);
    return choice;
  }
  if (field.empty()) return "";
  const fs::path first = field.front();
  const fs::path f = (fs::is_directory(first) ? first : first.parent_path()) / kFitsFileName;
  return fs::is_regular_file(f) ? f.string() : "";
}

void apply_field_fits(const FidelityRequest& r, const std::vector<FieldRun>& runs, const std::vector<FieldFit>& fits,
                      FidelityReport& report) {
  report.fits_file = fits.empty() ? "" : fits.front().fits_file;
  if (!fits.empty()) check_declared(fits, report.runs, fits.front().fits_file);
  const TrialRunner t(r, runs, report.runs);
  std::vector<const FieldFit*> active;
  for (const FieldFit& fit : fits) {
    FitResult res;
    res.fit = fit;
    res.file_value = read_fitted_value(fit);
    res.applies = check_fit_points(fit, t);
    if (res.applies) {
      active.push_back(&fit);
      const auto mean = [&](double v) { return t.mean_error(fit, v, fit.points); };
      const FitSearch s = fit_by_bisection(fit, mean);
      res.refit = s.value;
      res.evaluations = s.evaluations;
      // A refit on a bound of the declared range (the error kept its sign up to it, or only reaches zero there) is
      // the range's edge, not a value the points single out.
      res.at_bound = s.at_bound || std::abs(s.value - fit.lo) < fit.resolution / 2 ||
                     std::abs(s.value - fit.hi) < fit.resolution / 2;
      res.refit_error = mean(s.value);
      if (res.file_value) {
        res.file_error = mean(*res.file_value);
        // A value already at the minimum within rounding stays: the search moves a value only to improve the fit.
        // So does one whose points no value of the declared range can meet (the error keeps its sign to the bound):
        // the range says what is plausible, and a bound is not a fit; those points then need their expected_miss.
        if (res.at_bound || std::abs(res.file_error) <= std::abs(res.refit_error) + 0.05) {
          res.kept = true;
          res.refit = *res.file_value;
          res.refit_error = res.file_error;
        }
      }
    }
    report.fits.push_back(std::move(res));
  }
  // Leave-one-out: each point some fit uses, scored with every such fit refitted on its other points (or, with none
  // left, at its prior), every other fit as its file holds it.
  for (RunResult& run : report.runs)
    for (PointResult& p : run.points) {
      const std::string id = run.run.name + "/" + p.point.id;
      std::vector<std::pair<const FieldFit*, std::optional<double>>> values;
      std::vector<std::string> notes;
      for (const FieldFit* fit : active) {
        if (std::find(fit->points.begin(), fit->points.end(), id) == fit->points.end()) continue;
        std::vector<std::string> others;
        for (const std::string& q : fit->points)
          if (q != id) others.push_back(q);
        std::optional<double> v = fit->prior;
        if (others.empty()) {
          notes.push_back(fmt::format("{} = {} (prior: {})", fit->parameter, fitted_value_text(*fit, v),
                                      fit->prior_reason));
        } else {
          v = fit_by_bisection(*fit, [&](double x) { return t.mean_error(*fit, x, others); }).value;
          notes.push_back(fmt::format("{} = {} (refit on {})", fit->parameter, fitted_value_text(*fit, v),
                                      fmt::join(others, ", ")));
        }
        values.emplace_back(fit, v);
      }
      if (values.empty()) continue;
      p.loo_error_pct = t.errors(values, {id}).at(id);
      p.loo_note = fmt::format("{}", fmt::join(notes, "; "));
    }
}

void evaluate_setup_ranges(const FidelityRequest& r, const std::vector<FieldRun>& runs, FidelityReport& report) {
  for (RunResult& out : report.runs) {
    const auto src = std::find_if(runs.begin(), runs.end(), [&](const FieldRun& f) { return f.name == out.run.name; });
    // The range of the figure the point is scored on: the plan's, or a simulate-scored run's serving run.
    FidelityRequest q = r;
    q.simulate = r.simulate && src->scored_by == "simulate";
    for (PointResult& p : out.points) {
      // The run's sets, each replaced by the point's own of the same key.
      std::vector<PlausibleItem> items = out.run.plausible;
      for (const PlausibleItem& own : p.point.plausible) {
        auto it = std::find_if(items.begin(), items.end(), [&](const PlausibleItem& i) { return i.key == own.key; });
        if (it != items.end()) *it = own; else items.push_back(own);
      }
      if (items.empty()) continue;
      size_t combos = 1;
      for (const PlausibleItem& i : items) combos *= i.values.size();
      if (combos > kMaxPlausibleCombos)
        throw_error("{}: point '{}' (line {}): plausible sets give {} combinations, more than {}; narrow a set",
                    out.run.file, p.point.id, p.point.line, combos, kMaxPlausibleCombos);
      SetupRange range;
      range.combos = combos;
      for (const PlausibleItem& i : items) range.items.push_back(fmt::format("{} {{{}}}", i.key, fmt::join(i.values, ", ")));
      FieldTrial trial;
      trial.points = {out.run.name + "/" + p.point.id};
      bool first = true;
      for (size_t c = 0; c < combos; ++c) {
        FieldRun run = *src;
        YAML::Node o = run.overrides ? YAML::Clone(run.overrides) : YAML::Node(YAML::NodeType::Map);
        size_t rest = c;
        for (const PlausibleItem& i : items) {
          const std::string& v = i.values[rest % i.values.size()];
          rest /= i.values.size();
          if (i.key == "context") {
            for (FieldPoint& fp : run.points)
              if (fp.id == p.point.id) {
                try {
                  fp.context = std::stoll(v);
                } catch (const std::exception&) {
                  throw_error("{}: point '{}' (line {}): plausible context {}: expected a number of tokens",
                              out.run.file, p.point.id, p.point.line, v);
                }
                fp.context_given = true;
              }
          } else {
            o[i.key] = v;
          }
        }
        run.overrides = o;
        const std::vector<RunResult> res = evaluate_field_runs(q, {run}, trial);
        const PointResult& pr = res.at(0).points.at(0);
        const double v = q.simulate && pr.simulate ? *pr.simulate : pr.plan;
        range.min = first ? v : std::min(range.min, v);
        range.max = first ? v : std::max(range.max, v);
        first = false;
      }
      const double lo = p.point.published ? *p.point.published : p.point.published_range->first;
      const double hi = p.point.published ? *p.point.published : p.point.published_range->second;
      // A published figure equal to an end of the range, as printed, is inside it.
      const double slack = 1e-6 * std::max(std::abs(range.min), std::abs(range.max));
      range.covers = hi >= range.min - slack && lo <= range.max + slack;
      p.range = range;
    }
  }
}

}  // namespace hisparse::sim
