// @brief load_field_fits, the bisection and the write-back of a fitted value (see field_fits.h).
#include "sim/fidelity/field_fits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/fidelity/field_record.h"
#include "sim/fidelity/field_set.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::sim {

namespace fs = std::filesystem;

const char* to_string(FitKind k) {
  switch (k) {
    case FitKind::kCostTerm: return "cost_term";
    case FitKind::kMissSteadyScale: return "miss_steady_scale";
    case FitKind::kFieldOverride: return "field_override";
    case FitKind::kEfficiencyScale: return "efficiency_scale";
  }
  return "?";
}

std::string FieldFit::label() const { return fmt::format("{} ({})", parameter, file); }

std::vector<FieldFit> load_field_fits(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  StrictMap top(doc, path, "");
  top.require("fits");
  const YAML::Node list = top.sequence("fits");
  top.finish();
  std::vector<FieldFit> fits;
  for (size_t i = 0; i < list.size(); ++i) {
    StrictMap m(list[i], path, fmt::format("fits[{}]", i));
    FieldFit f;
    f.fits_file = path;
    f.line = list[i].Mark().line + 1;
    for (const char* key : {"parameter", "kind", "file", "points", "range", "resolution", "prior_reason"})
      m.require(key);
    m.get("parameter", &f.parameter);
    std::string kind;
    m.get_choice("kind", &kind, {"cost_term", "miss_steady_scale", "field_override", "efficiency_scale"});
    f.kind = kind == "cost_term"           ? FitKind::kCostTerm
             : kind == "miss_steady_scale" ? FitKind::kMissSteadyScale
             : kind == "efficiency_scale"  ? FitKind::kEfficiencyScale
                                           : FitKind::kFieldOverride;
    std::string file;
    m.get("file", &file);
    f.file = (fs::path(path).parent_path() / file).lexically_normal().string();
    if (!fs::is_regular_file(f.file))
      throw_error("{} (line {}): got '{}', expected a file (resolved against the fits file: {})", m.where("file"),
                  f.line, file, f.file);
    for (const YAML::Node& p : m.sequence("points")) {
      const std::string id = p.IsScalar() ? p.Scalar() : "";
      const size_t slash = id.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == id.size())
        throw_error("{} (line {}): got {}, expected run/point", m.where("points"), p.Mark().line + 1,
                    describe_node(p));
      f.points.push_back(id);
    }
    if (f.points.empty()) throw_error("{} (line {}): no point; a fit names the points it is fitted to",
                                      m.where("points"), f.line);
    const YAML::Node r = m.sequence("range");
    bool ok = r.size() == 2;
    try {
      if (ok) { f.lo = r[0].as<double>(); f.hi = r[1].as<double>(); }
    } catch (const YAML::Exception&) {
      ok = false;
    }
    if (!ok || !(f.lo < f.hi))
      throw_error("{} (line {}): got {}, expected [low, high] with low < high", m.where("range"), r.Mark().line + 1,
                  describe_node(r));
    m.get("resolution", &f.resolution, 0, 1e15);
    if (!(f.resolution > 0) || f.resolution >= f.hi - f.lo)
      throw_error("{} (line {}): got {:g}, expected > 0 and below the range's width {:g}", m.where("resolution"),
                  f.line, f.resolution, f.hi - f.lo);
    if (m.has("prior")) {
      std::string text;
      m.get("prior", &text);
      if (text == "none") {
        if (f.kind != FitKind::kFieldOverride)
          throw_error("{} (line {}): `none` (the override removed) is only for a field_override fit",
                      m.where("prior"), f.line);
      } else {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v))
          throw_error("{} (line {}): got '{}', expected a number{}", m.where("prior"), f.line, text,
                      f.kind == FitKind::kFieldOverride ? " or none" : "");
        f.prior = v;
      }
    } else if (f.kind != FitKind::kFieldOverride) {
      throw_error("{} (line {}): a {} fit needs its prior (the value without any point)", m.where("prior"), f.line,
                  kind);
    }
    m.get("prior_reason", &f.prior_reason);
    if (f.prior_reason.empty()) throw_error("{} (line {}): empty; say where the prior comes from",
                                            m.where("prior_reason"), f.line);
    m.finish();
    if (f.kind == FitKind::kCostTerm && !cost_time_term(f.parameter))
      throw_error("{}: fits[{}] (line {}): parameter {} is not a time-valued cost term", path, i, f.line,
                  f.parameter);
    if (f.kind == FitKind::kFieldOverride) {
      const auto& keys = field_override_keys();
      if (std::find(keys.begin(), keys.end(), f.parameter) == keys.end())
        throw_error("{}: fits[{}] (line {}): parameter {} is not an overrides key", path, i, f.line, f.parameter);
    }
    if (f.kind == FitKind::kMissSteadyScale && f.parameter != "steady_scale")
      throw_error("{}: fits[{}] (line {}): a miss_steady_scale fit's parameter is steady_scale (got {})", path, i,
                  f.line, f.parameter);
    if (f.kind == FitKind::kEfficiencyScale && f.parameter != kEfficiencyScaleTerm)
      throw_error("{}: fits[{}] (line {}): an efficiency_scale fit's parameter is {} (got {})", path, i, f.line,
                  kEfficiencyScaleTerm, f.parameter);
    if (f.kind == FitKind::kEfficiencyScale && !(f.lo > 0 && f.hi <= 1))
      throw_error("{}: fits[{}] (line {}): an efficiency_scale range lies in (0, 1] (got [{:g}, {:g}])", path, i,
                  f.line, f.lo, f.hi);
    for (const FieldFit& g : fits)
      if (g.parameter == f.parameter && g.file == f.file)
        throw_error("{}: fits[{}] (line {}): {} is fitted twice (also line {})", path, i, f.line, f.label(), g.line);
    fits.push_back(std::move(f));
  }
  return fits;
}

std::optional<double> read_fitted_value(const FieldFit& f) {
  switch (f.kind) {
    case FitKind::kCostTerm:
    case FitKind::kEfficiencyScale: {
      const CostParams base;
      const CostParams cost = load_cost_params(f.file, base);
      if (f.kind == FitKind::kEfficiencyScale) return cost.efficiency_scale;
      return static_cast<double>(cost.*cost_time_term(f.parameter)) * 1e-3;
    }
    case FitKind::kMissSteadyScale: {
      const MissSurface s = load_miss_surface(f.file);
      return s.provenance.calibration ? s.provenance.calibration->steady_scale : 1.0;
    }
    case FitKind::kFieldOverride: {
      const YAML::Node doc = load_yaml_file(f.file);
      const YAML::Node v = doc["overrides"] ? doc["overrides"][f.parameter] : YAML::Node();
      if (!v) return std::nullopt;
      try {
        return v.as<double>();
      } catch (const YAML::Exception&) {
        throw_error("{}: overrides.{} (line {}): got {}, expected a number (fitted by {})", f.file, f.parameter,
                    v.Mark().line + 1, describe_node(v), f.fits_file);
      }
    }
  }
  return std::nullopt;
}

double round_to_resolution(const FieldFit& f, double v) {
  return std::round(v / f.resolution) * f.resolution + 0.0;
}

std::string fitted_value_text(const FieldFit& f, std::optional<double> v) {
  if (!v) return "none";
  // As many decimals as the resolution has (0.1 → 1, 64 → 0).
  int digits = 0;
  for (double r = f.resolution; digits < 6 && std::abs(r - std::round(r)) > 1e-9; r *= 10) ++digits;
  return fmt::format("{:.{}f}{}", round_to_resolution(f, *v), digits, f.kind == FitKind::kCostTerm ? "us" : "");
}

FitSearch fit_by_bisection(const FieldFit& f, const std::function<double(double)>& mean_error) {
  FitSearch out;
  double lo = f.lo, hi = f.hi;
  double e_lo = mean_error(lo), e_hi = mean_error(hi);
  out.evaluations = 2;
  auto finish = [&](double v) {
    out.value = std::clamp(round_to_resolution(f, v), f.lo, f.hi);
    return out;
  };
  if (e_lo == 0) return finish(lo);
  if (e_hi == 0) return finish(hi);
  if ((e_lo > 0) == (e_hi > 0)) {
    out.at_bound = true;
    return finish(std::abs(e_lo) <= std::abs(e_hi) ? lo : hi);
  }
  for (int i = 0; i < 60 && hi - lo > f.resolution / 2; ++i) {
    const double mid = (lo + hi) / 2;
    const double e = mean_error(mid);
    ++out.evaluations;
    if (e == 0) return finish(mid);
    if ((e > 0) == (e_lo > 0)) {
      lo = mid;
      e_lo = e;
    } else {
      hi = mid;
      e_hi = e;
    }
  }
  return finish(std::abs(e_lo) <= std::abs(e_hi) ? lo : hi);
}

namespace {

size_t indent_of(const std::string& l) { return l.find_first_not_of(' ') == std::string::npos ? l.size() : l.find_first_not_of(' '); }

/// The value of `key:` on line `l` at indent `indent` replaced by `value`, its comment kept; false when `l` is not it.
bool replace_value(std::string& l, size_t indent, const std::string& key, const std::string& value) {
  if (indent_of(l) != indent || l.compare(indent, key.size() + 1, key + ":") != 0) return false;
  size_t v = indent + key.size() + 1;
  while (v < l.size() && l[v] == ' ') ++v;
  size_t e = v;
  while (e < l.size() && l[e] != ' ' && l[e] != '#') ++e;
  if (v == e) return false;  // a mapping follows on the next lines
  l = l.substr(0, v) + value + l.substr(e);
  return true;
}

}  // namespace

std::string with_fitted_value(const std::string& text, const FieldFit& f, double value) {
  if (f.kind == FitKind::kMissSteadyScale)
    throw_error("{}: {} is not edited in place: the steady fractions are the measured ones × the scale, so the "
                "surface is regenerated from its trace (set the scale in scripts/fit_miss_models.sh to {} and run it)",
                f.file, f.parameter, fitted_value_text(f, value));
  std::vector<std::string> lines = split_lines(text);
  const std::string v = fitted_value_text(f, value);
  const std::string block = in_cost_file(f.kind) ? f.parameter : "overrides";
  bool done = false;
  for (size_t i = 0; i < lines.size() && !done; ++i) {
    if (indent_of(lines[i]) != 0 || lines[i].rfind(block + ":", 0) != 0) continue;
    if (in_cost_file(f.kind) && replace_value(lines[i], 0, f.parameter, v)) {
      done = true;  // a bare value
      break;
    }
    // The block's lines, indented under it: its `value:` (a cost term) or the override's key.
    const std::string key = in_cost_file(f.kind) ? "value" : f.parameter;
    for (size_t k = i + 1; k < lines.size() && !done; ++k) {
      if (indent_of(lines[k]) == 0 && !lines[k].empty() && lines[k][0] != '#') break;
      done = replace_value(lines[k], 2, key, v);
    }
  }
  if (!done)
    throw_error("{}: no `{}` line to write {} = {} into (fitted by {}, line {})", f.file,
                in_cost_file(f.kind) ? f.parameter + ": value" : "overrides: " + f.parameter, f.parameter, v,
                f.fits_file, f.line);
  return join_lines(lines, text);
}

std::string fit_drift(const FitResult& r) {
  if (!r.applies || r.kept) return "";
  if (r.file_value && std::abs(*r.file_value - r.refit) < r.fit.resolution / 2) return "";
  return fmt::format("{}: the file holds {}, the suite's refit from {} is {} (run `hisparse fidelity --fit --write`)",
                     r.fit.label(), fitted_value_text(r.fit, r.file_value), fmt::join(r.fit.points, ", "),
                     fitted_value_text(r.fit, r.refit));
}

}  // namespace hisparse::sim
