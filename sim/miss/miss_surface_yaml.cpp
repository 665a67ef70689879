// @brief scenarios/miss_models/*.yaml: the strict loader and the writer of a MissSurface (they accept and write
// exactly the same keys, so a written file always loads and a hand edit with a typo never loads silently).
#include <cmath>
#include <filesystem>
#include <limits>
#include <initializer_list>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/not_found_error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/miss/miss_surface.h"
#include "core/io/output_file.h"
#include "traces/trace_source.h"

namespace hisparse::sim {
namespace {

std::string resolve_surface_path(const std::string& name_or_path) {
  if (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0) return name_or_path;
  std::vector<std::string> tried;
  for (const std::string& dir : scenario_dirs()) {
    const std::filesystem::path p = std::filesystem::path(dir) / "miss_models" / (name_or_path + ".yaml");
    if (std::filesystem::exists(p)) return p.string();
    tried.push_back(p.string());
  }
  throw_not_found("miss surface '{}' not found (looked for {}); give a name under scenarios/miss_models/ or a .yaml path",
              name_or_path,
              tried.empty() ? std::string("no scenario directory") : fmt::format("{}", fmt::join(tried, ", ")));
}

constexpr double kHuge = 9.0e15;  // integers beyond this are not exact in a double

/// Every key of a mapping the format requires (the writer writes them all).
void require_all(const StrictMap& m, std::initializer_list<const char*> keys) {
  for (const char* k : keys) m.require(k);
}

/// A number of a [a, b] pair inside a list, which StrictMap (a mapping view) does not cover: same wording.
double pair_number(const YAML::Node& n, const std::string& where) {
  double v = 0;
  if (!n.IsScalar() || !parse_quantity(n.Scalar(), Unit::kNone, &v) || !std::isfinite(v))
    throw_error("{}: got {}, expected a number", where, describe_node(n));
  return v;
}

std::pair<double, double> pair_of(const YAML::Node& n, const std::string& where, const char* what) {
  if (!n.IsSequence() || n.size() != 2) throw_error("{}: got {}, expected {}", where, describe_node(n), what);
  return {pair_number(n[0], where + "[0]"), pair_number(n[1], where + "[1]")};
}

/// "file: path[i]" as StrictMap names list items.
StrictMap item(const YAML::Node& n, const StrictMap& parent, const std::string& path) {
  if (!n.IsMap()) throw_error("{}: {}: got {}, expected a mapping", parent.file(), path, describe_node(n));
  return StrictMap(n, parent.file(), path);
}

MissColumn read_column(StrictMap m) {
  MissColumn c;
  // H/K >= 1: the buffer holds at least the top-k.
  m.get("h_over_k", &c.h_over_k, 1.0, kHuge);
  m.get("first_step", &c.first_step, 0.0, 1.0);
  m.get("first_step_samples", &c.first_step_samples, 1, static_cast<int64_t>(kHuge));
  m.get("warmup", &c.warmup, 0.0, 1.0);
  m.get("warmup_samples", &c.warmup_samples, 1, static_cast<int64_t>(kHuge));
  m.get("samples", &c.samples, 1, static_cast<int64_t>(kHuge));
  const YAML::Node range = m.sequence("n_over_h"), st = m.sequence("steady");
  // A misspelt key is named as such before the key it was meant to be is reported missing.
  m.finish();
  require_all(m, {"h_over_k", "first_step", "first_step_samples", "warmup", "warmup_samples", "steady", "samples",
                  "n_over_h"});
  const std::string range_at = m.where("n_over_h");
  std::tie(c.n_over_h_min, c.n_over_h_max) = pair_of(range, range_at, "[min n/H, max n/H]");
  if (!(c.n_over_h_min >= 1.0 && c.n_over_h_max >= c.n_over_h_min))
    throw_error("{}: [{}, {}] must satisfy 1 <= min <= max (steady samples have n > H)", range_at, c.n_over_h_min,
                c.n_over_h_max);
  const std::string steady_at = m.where("steady");
  if (st.size() == 0)
    throw_error("{}: got {}, expected a non-empty list of [n/H, fraction] pairs", steady_at, describe_node(st));
  for (size_t i = 0; i < st.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", steady_at, i);
    const auto [r, f] = pair_of(st[i], at, "[n/H, fraction]");
    if (!(r >= 1.0)) throw_error("{}: n/H {} must be >= 1 (steady samples have n > H)", at, r);
    if (!(f >= 0.0 && f <= 1.0)) throw_error("{}: got fraction {}, expected a number in [0, 1]", at, f);
    if (!c.steady.empty() && !(r > c.steady.back().first))
      throw_error("{}: n/H must ascend strictly ({} after {})", at, r, c.steady.back().first);
    c.steady.emplace_back(r, f);
  }
  return c;
}

MissTraceInfo read_trace(StrictMap m) {
  MissTraceInfo t;
  m.get("path", &t.path);
  int64_t layers = 0, top_k = 0;
  m.get("layers", &layers, 1, std::numeric_limits<int32_t>::max());
  m.get("top_k", &top_k, 1, std::numeric_limits<int32_t>::max());
  t.layers = static_cast<int32_t>(layers);
  t.top_k = static_cast<int32_t>(top_k);
  std::string state;
  m.get("initial_state", &state);
  m.get("requests", &t.requests, 0, static_cast<int64_t>(kHuge));
  m.get("decode_steps", &t.decode_steps, 0, static_cast<int64_t>(kHuge));
  const YAML::Node range = m.sequence("n_range");
  m.finish();
  require_all(m, {"path", "layers", "top_k", "initial_state", "requests", "decode_steps", "n_range"});
  t.initial_state = traces::parse_initial_state(state, m.where("initial_state"));
  const auto [lo, hi] = pair_of(range, m.where("n_range"), "[min n, max n]");
  t.n_min = static_cast<int32_t>(lo);
  t.n_max = static_cast<int32_t>(hi);
  return t;
}

MissCalibration read_calibration(StrictMap m) {
  MissCalibration c;
  m.get("steady_scale", &c.steady_scale, 1e-6, 1e6);
  const YAML::Node pts = m.sequence("fitted_to");
  m.finish();
  require_all(m, {"steady_scale", "fitted_to"});
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", m.where("fitted_to"), i);
    if (!pts[i].IsScalar() || pts[i].Scalar().find('/') == std::string::npos)
      throw_error("{}: got {}, expected a field point as run/point", at, describe_node(pts[i]));
    c.fitted_to.push_back(pts[i].Scalar());
  }
  if (c.fitted_to.empty())
    throw_error("{}: got an empty list, expected the field points the scale was fitted to", m.where("fitted_to"));
  return c;
}

MissProvenance read_provenance(StrictMap m) {
  MissProvenance p;
  m.get("command", &p.command);
  m.get("fraction", &p.fraction);
  m.get("warmup_rule", &p.warmup_rule);
  const YAML::Node ts = m.sequence("traces");
  if (m.has("calibration")) p.calibration = read_calibration(m.child("calibration"));
  m.finish();
  require_all(m, {"command", "fraction", "warmup_rule", "traces"});
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string path = fmt::format("provenance.traces[{}]", i);
    p.traces.push_back(read_trace(item(ts[i], m, path)));
  }
  return p;
}

// Rounds outward, so the written range still holds every sample it was measured over.
double floor_to(double x, int digits) { return std::floor(x * std::pow(10.0, digits)) / std::pow(10.0, digits); }
double ceil_to(double x, int digits) { return std::ceil(x * std::pow(10.0, digits)) / std::pow(10.0, digits); }

}  // namespace

MissSurface load_miss_surface(const std::string& name_or_path) {
  MissSurface s;
  s.file = resolve_surface_path(name_or_path);
  const YAML::Node root = load_yaml_file(s.file);
  if (!root.IsMap()) throw_error("{}: got {}, expected a mapping", s.file, describe_node(root));
  StrictMap top(root, s.file, "");
  require_all(top, {"name", "policies"});
  top.get("name", &s.name);
  if (!top.is_map("policies") || root["policies"].size() == 0)
    throw_error("{}: policies: got {}, expected a mapping of policy → columns", s.file, describe_node(root["policies"]));
  StrictMap policies = top.child("policies");
  for (const auto& kv : root["policies"]) {
    const std::string policy = kv.first.Scalar();
    const YAML::Node columns = policies.sequence(policy);
    const std::string where = policies.where(policy);
    if (columns.size() == 0)
      throw_error("{}: got {}, expected a non-empty list of columns", where, describe_node(kv.second));
    std::vector<MissColumn>& cols = s.policies[policy];
    for (size_t i = 0; i < columns.size(); ++i) {
      const std::string path = fmt::format("policies.{}[{}]", policy, i);
      MissColumn c = read_column(item(columns[i], top, path));
      if (!cols.empty() && !(c.h_over_k > cols.back().h_over_k))
        throw_error("{}: {}.h_over_k: H/K must ascend strictly ({} after {})", s.file, path, c.h_over_k,
                    cols.back().h_over_k);
      cols.push_back(std::move(c));
    }
  }
  policies.finish();
  if (top.is_map("provenance")) {
    s.provenance = read_provenance(top.child("provenance"));
    s.has_provenance = true;
  } else if (top.has("provenance")) {
    throw_error("{}: provenance: got {}, expected a mapping", s.file, describe_node(root["provenance"]));
  }
  top.finish();
  return s;
}

std::string miss_surface_to_yaml(const MissSurface& s, const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& line : header) out += line.empty() ? "#\n" : "# " + line + "\n";
  const int fd = kFractionDigits, rd = kRatioDigits;
  out += fmt::format("name: {}\n", yaml_quote(s.name));
  out += "policies:                       # policy → columns ascending in H/K\n";
  for (const auto& [policy, cols] : s.policies) {
    out += fmt::format("  {}:\n", yaml_quote(policy));
    for (const MissColumn& c : cols) {
      out += fmt::format("    - h_over_k: {:.{}f}\n", c.h_over_k, rd);
      out += fmt::format("      first_step: {:.{}f}\n", c.first_step, fd);
      out += fmt::format("      first_step_samples: {}\n", c.first_step_samples);
      out += fmt::format("      warmup: {:.{}f}\n", c.warmup, fd);
      out += fmt::format("      warmup_samples: {}\n", c.warmup_samples);
      out += "      steady:                   # [n/H, fraction], n/H ascending\n";
      for (const auto& [r, f] : c.steady) out += fmt::format("        - [{:.{}f}, {:.{}f}]\n", r, rd, f, fd);
      out += fmt::format("      samples: {}\n", c.samples);
      out += fmt::format("      n_over_h: [{:.{}f}, {:.{}f}]\n", floor_to(c.n_over_h_min, rd), rd,
                         ceil_to(c.n_over_h_max, rd), rd);
    }
  }
  if (s.has_provenance) {
    const MissProvenance& p = s.provenance;
    out += "provenance:\n";
    out += fmt::format("  command: {}\n", yaml_quote(p.command));
    out += fmt::format("  fraction: {}\n", yaml_quote(p.fraction));
    out += fmt::format("  warmup_rule: {}\n", yaml_quote(p.warmup_rule));
    out += "  traces:\n";
    for (const MissTraceInfo& t : p.traces) {
      out += fmt::format("    - path: {}\n", yaml_quote(t.path));
      out += fmt::format("      layers: {}\n      top_k: {}\n", t.layers, t.top_k);
      out += fmt::format("      initial_state: {}\n", traces::to_string(t.initial_state));
      out += fmt::format("      requests: {}\n      decode_steps: {}\n", t.requests, t.decode_steps);
      out += fmt::format("      n_range: [{}, {}]\n", t.n_min, t.n_max);
    }
    if (p.calibration) {
      out += "  calibration:                  # steady fractions above = measured × steady_scale\n";
      out += fmt::format("    steady_scale: {:g}\n", p.calibration->steady_scale);
      out += "    fitted_to:\n";
      for (const std::string& point : p.calibration->fitted_to) out += fmt::format("      - {}\n", yaml_quote(point));
    }
  }
  return out;
}

}  // namespace hisparse::sim
