// @brief scenarios/miss_models/*.yaml: the strict loader and the writer of a MissSurface (they accept and write
// exactly the same keys, so a written file always loads and a hand edit with a typo never loads silently).
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/miss/miss_surface.h"
#include "core/io/output_file.h"
#include "traces/trace_source.h"

namespace hisparse::sim {
namespace {

const std::set<std::string> kTopKeys = {"name", "policies", "provenance"};
const std::set<std::string> kColumnKeys = {"h_over_k", "first_step", "first_step_samples", "warmup",
                                           "warmup_samples", "steady", "samples", "n_over_h"};
const std::set<std::string> kProvenanceKeys = {"command", "fraction", "warmup_rule", "traces"};
const std::set<std::string> kTraceKeys = {"path", "layers", "top_k", "initial_state", "requests", "decode_steps",
                                          "n_range"};

std::string resolve_surface_path(const std::string& name_or_path) {
  if (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0) return name_or_path;
  std::vector<std::string> tried;
  for (const std::string& dir : scenario_dirs()) {
    const std::filesystem::path p = std::filesystem::path(dir) / "miss_models" / (name_or_path + ".yaml");
    if (std::filesystem::exists(p)) return p.string();
    tried.push_back(p.string());
  }
  throw_error("miss surface '{}' not found (looked for {}); give a name under scenarios/miss_models/ or a .yaml path",
              name_or_path,
              tried.empty() ? std::string("no scenario directory") : fmt::format("{}", fmt::join(tried, ", ")));
}

/// Unknown keys are errors; every key of `keys` must be present.
void check_keys(const YAML::Node& n, const std::set<std::string>& keys, const std::set<std::string>& required,
                const std::string& where) {
  if (!n.IsMap()) throw_error("{}: expected a mapping, got {}", where, describe_node(n));
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (!keys.count(key))
      throw_error("{}: unknown key '{}'; expected one of: {}", where, key, fmt::join(keys, ", "));
  }
  for (const std::string& key : required)
    if (!n[key]) throw_error("{}: key '{}' is required", where, key);
}

std::string text(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw_error("{}: expected a string, got {}", where, describe_node(n));
  return n.Scalar();
}

double number(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw_error("{}: expected a number, got {}", where, describe_node(n));
  try {
    const double v = n.as<double>();
    if (std::isfinite(v)) return v;
  } catch (const YAML::Exception&) {
  }
  throw_error("{}: expected a number, got {}", where, describe_node(n));
}

int64_t integer(const YAML::Node& n, const std::string& where, int64_t lo) {
  const double v = number(n, where);
  if (!(v >= static_cast<double>(lo) && v <= 9.0e15) || v != std::floor(v))
    throw_error("{}: expected an integer >= {}, got {}", where, lo, describe_node(n));
  return static_cast<int64_t>(v);
}

double fraction(const YAML::Node& n, const std::string& where) {
  const double f = number(n, where);
  if (!(f >= 0.0 && f <= 1.0)) throw_error("{}: fraction {} must be in [0, 1]", where, f);
  return f;
}

std::pair<double, double> pair_of(const YAML::Node& n, const std::string& where, const char* what) {
  if (!n.IsSequence() || n.size() != 2) throw_error("{}: expected {}, got {}", where, what, describe_node(n));
  return {number(n[0], where + "[0]"), number(n[1], where + "[1]")};
}

MissColumn read_column(const YAML::Node& n, const std::string& where) {
  check_keys(n, kColumnKeys, kColumnKeys, where);
  MissColumn c;
  c.h_over_k = number(n["h_over_k"], where + ".h_over_k");
  if (!(c.h_over_k >= 1.0))
    throw_error("{}.h_over_k: {} must be >= 1 (the buffer holds at least the top-k)", where, c.h_over_k);
  c.first_step = fraction(n["first_step"], where + ".first_step");
  c.first_step_samples = integer(n["first_step_samples"], where + ".first_step_samples", 1);
  c.warmup = fraction(n["warmup"], where + ".warmup");
  c.warmup_samples = integer(n["warmup_samples"], where + ".warmup_samples", 1);
  c.samples = integer(n["samples"], where + ".samples", 1);
  const std::string range_at = where + ".n_over_h";
  std::tie(c.n_over_h_min, c.n_over_h_max) = pair_of(n["n_over_h"], range_at, "[min n/H, max n/H]");
  if (!(c.n_over_h_min >= 1.0 && c.n_over_h_max >= c.n_over_h_min))
    throw_error("{}: [{}, {}] must satisfy 1 <= min <= max (steady samples have n > H)", range_at, c.n_over_h_min,
                c.n_over_h_max);
  const YAML::Node& st = n["steady"];
  const std::string steady_at = where + ".steady";
  if (!st.IsSequence() || st.size() == 0)
    throw_error("{}: expected a non-empty list of [n/H, fraction] pairs, got {}", steady_at, describe_node(st));
  for (size_t i = 0; i < st.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", steady_at, i);
    const auto [r, f] = pair_of(st[i], at, "[n/H, fraction]");
    if (!(r >= 1.0)) throw_error("{}: n/H {} must be >= 1 (steady samples have n > H)", at, r);
    if (!(f >= 0.0 && f <= 1.0)) throw_error("{}: fraction {} must be in [0, 1]", at, f);
    if (!c.steady.empty() && !(r > c.steady.back().first))
      throw_error("{}: n/H must ascend strictly ({} after {})", at, r, c.steady.back().first);
    c.steady.emplace_back(r, f);
  }
  return c;
}

MissTraceInfo read_trace(const YAML::Node& n, const std::string& where) {
  check_keys(n, kTraceKeys, kTraceKeys, where);
  MissTraceInfo t;
  t.path = text(n["path"], where + ".path");
  t.layers = static_cast<int32_t>(integer(n["layers"], where + ".layers", 1));
  t.top_k = static_cast<int32_t>(integer(n["top_k"], where + ".top_k", 1));
  t.initial_state = traces::parse_initial_state(text(n["initial_state"], where + ".initial_state"),
                                                where + ".initial_state");
  t.requests = integer(n["requests"], where + ".requests", 0);
  t.decode_steps = integer(n["decode_steps"], where + ".decode_steps", 0);
  const auto [lo, hi] = pair_of(n["n_range"], where + ".n_range", "[min n, max n]");
  t.n_min = static_cast<int32_t>(lo);
  t.n_max = static_cast<int32_t>(hi);
  return t;
}

MissProvenance read_provenance(const YAML::Node& n, const std::string& where) {
  check_keys(n, kProvenanceKeys, kProvenanceKeys, where);
  MissProvenance p;
  p.command = text(n["command"], where + ".command");
  p.fraction = text(n["fraction"], where + ".fraction");
  p.warmup_rule = text(n["warmup_rule"], where + ".warmup_rule");
  const YAML::Node& ts = n["traces"];
  if (!ts.IsSequence()) throw_error("{}.traces: expected a list, got {}", where, describe_node(ts));
  for (size_t i = 0; i < ts.size(); ++i) p.traces.push_back(read_trace(ts[i], fmt::format("{}.traces[{}]", where, i)));
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
  check_keys(root, kTopKeys, {"name", "policies"}, s.file);
  s.name = text(root["name"], s.file + ": name");
  const YAML::Node& pol = root["policies"];
  if (!pol.IsMap() || pol.size() == 0)
    throw_error("{}: policies: expected a mapping of policy → columns, got {}", s.file, describe_node(pol));
  for (const auto& kv : pol) {
    const std::string policy = kv.first.Scalar();
    const std::string where = fmt::format("{}: policies.{}", s.file, policy);
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      throw_error("{}: expected a non-empty list of columns, got {}", where, describe_node(kv.second));
    std::vector<MissColumn>& cols = s.policies[policy];
    for (size_t i = 0; i < kv.second.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", where, i);
      MissColumn c = read_column(kv.second[i], at);
      if (!cols.empty() && !(c.h_over_k > cols.back().h_over_k))
        throw_error("{}.h_over_k: H/K must ascend strictly ({} after {})", at, c.h_over_k, cols.back().h_over_k);
      cols.push_back(std::move(c));
    }
  }
  if (root["provenance"]) {
    s.provenance = read_provenance(root["provenance"], s.file + ": provenance");
    s.has_provenance = true;
  }
  return s;
}

std::string miss_surface_to_yaml(const MissSurface& s, const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& line : header) out += line.empty() ? "#\n" : "# " + line + "\n";
  const int fd = kFractionDigits, rd = kRatioDigits;
  out += fmt::format("name: {}\n", json_quote(s.name));
  out += "policies:                       # policy → columns ascending in H/K\n";
  for (const auto& [policy, cols] : s.policies) {
    out += fmt::format("  {}:\n", json_quote(policy));
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
    out += fmt::format("  command: {}\n", json_quote(p.command));
    out += fmt::format("  fraction: {}\n", json_quote(p.fraction));
    out += fmt::format("  warmup_rule: {}\n", json_quote(p.warmup_rule));
    out += "  traces:\n";
    for (const MissTraceInfo& t : p.traces) {
      out += fmt::format("    - path: {}\n", json_quote(t.path));
      out += fmt::format("      layers: {}\n      top_k: {}\n", t.layers, t.top_k);
      out += fmt::format("      initial_state: {}\n", traces::to_string(t.initial_state));
      out += fmt::format("      requests: {}\n      decode_steps: {}\n", t.requests, t.decode_steps);
      out += fmt::format("      n_range: [{}, {}]\n", t.n_min, t.n_max);
    }
  }
  return out;
}

}  // namespace hisparse::sim
