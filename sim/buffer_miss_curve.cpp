// @brief Loading scenarios/miss_models/*.yaml and turning a curve into the statistical model's parameters.
#include "sim/buffer_miss_curve.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {
namespace {

std::string resolve_curve_path(const std::string& name_or_path) {
  if (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".yaml") == 0) return name_or_path;
  std::vector<std::string> tried;
  for (const std::string& dir : scenario_dirs()) {
    const std::filesystem::path p = std::filesystem::path(dir) / "miss_models" / (name_or_path + ".yaml");
    if (std::filesystem::exists(p)) return p.string();
    tried.push_back(p.string());
  }
  throw_error("miss curve '{}' not found (looked for {}); give a name under scenarios/miss_models/ or a .yaml path",
              name_or_path, tried.empty() ? std::string("no scenario directory") : fmt::format("{}", fmt::join(tried, ", ")));
}

double number(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw_error("{}: expected a number, got {}", where, describe_node(n));
  try {
    return n.as<double>();
  } catch (const YAML::Exception&) {
    throw_error("{}: expected a number, got {}", where, describe_node(n));
  }
}

RatioCurve read_curve(const YAML::Node& n, const std::string& where) {
  if (!n.IsSequence() || n.size() == 0)
    throw_error("{}: expected a non-empty list of [H/K, fraction] pairs, got {}", where, describe_node(n));
  RatioCurve out;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    if (!n[i].IsSequence() || n[i].size() != 2) throw_error("{}: expected [H/K, fraction], got {}", at, describe_node(n[i]));
    const double r = number(n[i][0], at + " H/K"), f = number(n[i][1], at + " fraction");
    if (!(r >= 1.0)) throw_error("{}: H/K {} must be >= 1 (the buffer holds at least the top-k)", at, r);
    if (!(f >= 0.0 && f <= 1.0)) throw_error("{}: fraction {} must be in [0, 1]", at, f);
    if (!out.empty() && !(r > out.back().first))
      throw_error("{}: H/K must ascend strictly ({} after {})", at, r, out.back().first);
    out.emplace_back(r, f);
  }
  return out;
}

std::map<std::string, RatioCurve> read_curves(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap() || n.size() == 0) throw_error("{}: expected a mapping of name → curve, got {}", where, describe_node(n));
  std::map<std::string, RatioCurve> out;
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    out[key] = read_curve(kv.second, where + "." + key);
  }
  return out;
}

}  // namespace

double interpolate_ratio_curve(const RatioCurve& v, double x) {
  if (v.empty()) throw_error("interpolate_ratio_curve: empty curve");
  if (x <= v.front().first) return v.front().second;
  if (x >= v.back().first) return v.back().second;
  const auto hi = std::upper_bound(v.begin(), v.end(), x, [](double a, const auto& p) { return a < p.first; });
  const auto lo = hi - 1;
  const double t = (x - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

double BufferMissCurve::fraction(const std::string& policy, double h_over_k) const {
  const auto it = curves.find(policy);
  if (it == curves.end()) {
    std::vector<std::string> names;
    for (const auto& kv : curves) names.push_back(kv.first);
    throw_error("miss curve {} ({}) has no curve for policy '{}'; it has: {}", name, file, policy, fmt::join(names, ", "));
  }
  return interpolate_ratio_curve(it->second, h_over_k);
}

BufferMissCurve load_buffer_miss_curve(const std::string& name_or_path) {
  BufferMissCurve c;
  c.file = resolve_curve_path(name_or_path);
  const YAML::Node root = load_yaml_file(c.file);
  if (!root.IsMap()) throw_error("{}: expected a mapping at the top, got {}", c.file, describe_node(root));
  static const std::set<std::string> kKeys = {"name", "top_k", "curves", "reference"};
  for (const auto& kv : root)
    if (!kKeys.count(kv.first.Scalar()))
      throw_error("{}: unknown key '{}'; expected one of: curves, name, reference, top_k", c.file, kv.first.Scalar());
  for (const char* key : {"name", "top_k", "curves"})
    if (!root[key]) throw_error("{}: key '{}' is required", c.file, key);
  if (!root["name"].IsScalar()) throw_error("{}: name: expected a string, got {}", c.file, describe_node(root["name"]));
  c.name = root["name"].Scalar();
  const double k = number(root["top_k"], c.file + ": top_k");
  if (!(k >= 1 && k <= 1 << 20) || k != static_cast<double>(static_cast<int32_t>(k)))
    throw_error("{}: top_k: expected an integer in [1, 1048576], got {}", c.file, describe_node(root["top_k"]));
  c.top_k = static_cast<int32_t>(k);
  c.curves = read_curves(root["curves"], c.file + ": curves");
  if (root["reference"]) c.reference = read_curves(root["reference"], c.file + ": reference");
  return c;
}

StatisticalMissParams miss_params_from_curve(const Scenario& s, const BufferMissCurve& curve, const std::string& policy) {
  StatisticalMissParams p;
  p.layers = s.model.layers;
  p.top_k = s.deployment.hisparse.top_k;
  p.H = s.deployment.hisparse.device_buffer_size;
  const double h_over_k = static_cast<double>(p.H) / std::max(1, p.top_k);
  // The traces show no dependence on n/H that can be told apart from H/K, so one fraction for every n > H.
  const double f = curve.fraction(policy, h_over_k);
  p.by_ratio = {{1.0, f}};
  p.fitted_from = fmt::format("miss curve {} ({}, policy {}, measured at K {}): H/K {:.4g} → {:.4g}", curve.name,
                              curve.file, policy, curve.top_k, h_over_k, f);
  return p;
}

StatisticalMissParams placeholder_miss_params(const Scenario& s) {
  StatisticalMissParams p;
  p.layers = s.model.layers;
  p.top_k = s.deployment.hisparse.top_k;
  p.H = s.deployment.hisparse.device_buffer_size;
  p.by_ratio = {{1.0, 0.10}};
  p.fitted_from = "placeholder (10 % once n > H, not derived from data)";
  return p;
}

}  // namespace hisparse::sim
