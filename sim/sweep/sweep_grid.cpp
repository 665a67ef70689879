// @brief Reading, validating and expanding a sweep grid (sweep_grid.h, docs/sweep.md).
#include "sim/sweep/sweep_grid.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "cpu_ref/policies/registry.h"
#include "traces/trace_source.h"

namespace hisparse::sim::sweep {

namespace fs = std::filesystem;

const char* to_string(JobKind kind) {
  switch (kind) {
    case JobKind::kPlan: return "plan";
    case JobKind::kReplay: return "replay";
    case JobKind::kSimulate: return "simulate";
  }
  return "?";
}

const std::vector<std::string>& axis_names() {
  static const std::vector<std::string> names = {"scenario", "workload", "trace", "context", "device_buffer_size",
                                                 "host_to_device_ratio", "policy", "concurrency", "mode"};
  return names;
}

bool axis_applies(JobKind kind, const std::string& axis) {
  static const std::map<JobKind, std::set<std::string>> by_kind = {
      {JobKind::kPlan, {"scenario", "context", "device_buffer_size", "host_to_device_ratio", "policy"}},
      {JobKind::kReplay, {"scenario", "trace", "device_buffer_size", "policy"}},
      {JobKind::kSimulate,
       {"scenario", "workload", "device_buffer_size", "host_to_device_ratio", "policy", "concurrency", "mode"}},
  };
  return by_kind.at(kind).count(axis) > 0;
}

namespace {

const std::map<JobKind, std::vector<std::string>>& required_axes() {
  static const std::map<JobKind, std::vector<std::string>> req = {
      {JobKind::kPlan, {"scenario", "context"}},
      {JobKind::kReplay, {"trace", "device_buffer_size"}},
      {JobKind::kSimulate, {"scenario", "workload"}},
  };
  return req;
}

std::string line_of(const YAML::Node& n) {
  return n.IsDefined() && n.Mark().line >= 0 ? fmt::format(" (line {})", n.Mark().line + 1) : std::string();
}

[[noreturn]] void fail(const std::string& file, const std::string& path, const YAML::Node& node,
                       const std::string& expected) {
  throw_error("{}: {}{}: got {}, expected {}", file, path, line_of(node), describe_node(node), expected);
}

bool parse_int(const std::string& t, int64_t* out) {
  if (t.empty()) return false;
  size_t i = t[0] == '-' ? 1 : 0;
  if (i == t.size()) return false;
  int64_t v = 0;
  for (; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
    if (v > (int64_t{1} << 50)) return false;
    v = v * 10 + (t[i] - '0');
  }
  *out = t[0] == '-' ? -v : v;
  return true;
}

/// Checks shared by every trace and scenario named in the grid: each is opened once.
struct Resolver {
  std::string file, base_dir;
  std::map<std::string, int32_t> scenario_top_k;
  std::map<std::string, int32_t> trace_top_k;

  int32_t scenario(const std::string& name, const std::string& path, const YAML::Node& node) {
    auto it = scenario_top_k.find(name);
    if (it != scenario_top_k.end()) return it->second;
    int32_t k = 0;
    try {
      k = load_scenario(name).deployment.hisparse.top_k;
    } catch (const Error& e) {
      throw_error("{}: {}{}: scenario '{}' does not load: {}", file, path, line_of(node), name, e.what());
    }
    scenario_top_k[name] = k;
    return k;
  }
  std::string trace_path(const std::string& t) const {
    const fs::path p(t);
    return p.is_absolute() ? t : (fs::path(base_dir) / p).lexically_normal().string();
  }
  int32_t trace(const std::string& t, const std::string& path, const YAML::Node& node) {
    const std::string resolved = trace_path(t);
    auto it = trace_top_k.find(resolved);
    if (it != trace_top_k.end()) return it->second;
    int32_t k = 0;
    try {
      k = traces::open_trace(resolved)->meta().top_k;
    } catch (const Error& e) {
      throw_error("{}: {}{}: trace '{}' (resolved against the grid file's directory: {}) does not open: {}", file, path,
                  line_of(node), t, resolved, e.what());
    }
    trace_top_k[resolved] = k;
    return k;
  }
};

/// Validates one axis value and stores it into `p`.
void set_axis(GridPoint& p, const std::string& axis, const YAML::Node& v, const std::string& file,
              const std::string& path, Resolver& r) {
  if (!v.IsScalar()) fail(file, path, v, "a single value (a scalar)");
  const std::string t = v.Scalar();
  int64_t n = 0;
  if (axis == "scenario") {
    if (t.empty()) fail(file, path, v, "a deployment name (scenarios/deployments) or a YAML path");
    r.scenario(t, path, v);
    p.scenario = t;
  } else if (axis == "workload") {
    if (t.empty()) fail(file, path, v, "a workload name (scenarios/workloads), a workload YAML or a .jsonl/.csv trace");
    p.workload = t;
  } else if (axis == "trace") {
    if (t.empty()) fail(file, path, v, "a top-k trace path (native, .npy directory or .jsonl)");
    r.trace(t, path, v);
    p.trace = t;
    p.trace_path = r.trace_path(t);
  } else if (axis == "context") {
    if (!parse_token_count(t, &n) || n < 1 || n > (int64_t{1} << 30))
      fail(file, path, v, "a sequence length in tokens in [1, 2^30] (e.g. 32768 or 32K)");
    p.context = n;
  } else if (axis == "device_buffer_size") {
    if (!parse_token_count(t, &n) || n < 1 || n > (int64_t{1} << 24))
      fail(file, path, v, "a device_buffer_size in tokens in [1, 2^24] (e.g. 4096 or 4K)");
    p.device_buffer_size = static_cast<int32_t>(n);
  } else if (axis == "host_to_device_ratio") {
    if (!parse_int(t, &n) || n < 1 || n > (1 << 20)) fail(file, path, v, "an integer host_to_device_ratio in [1, 2^20]");
    p.host_to_device_ratio = static_cast<int32_t>(n);
  } else if (axis == "policy") {
    std::vector<std::string> known;
    for (const auto& e : cpu_ref::policy_registry()) known.push_back(e.name);
    if (std::find(known.begin(), known.end(), t) == known.end())
      fail(file, path, v, fmt::format("a swap-in policy: one of {}", fmt::join(known, ", ")));
    p.policy = t;
  } else if (axis == "concurrency") {
    if (!parse_int(t, &n) || n < 0 || n > (1 << 20))
      fail(file, path, v, "closed-loop clients in [0, 2^20] (0 = the workload's open-loop arrivals)");
    p.concurrency = static_cast<int32_t>(n);
  } else if (axis == "mode") {
    if (t != "hisparse" && t != "full" && t != "dynamic")
      fail(file, path, v, "hisparse, full or dynamic (dynamic residency, as `hisparse simulate --mode dynamic`)");
    p.mode = t;
  }
}

JobSettings read_settings(StrictMap m, JobKind kind) {
  JobSettings s;
  auto only = [&](const char* key, std::initializer_list<JobKind> kinds) {
    if (!m.has(key)) return false;
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
      throw_error("{}: setting '{}' does not apply to a {} job", m.where(key), key, to_string(kind));
    return true;
  };
  if (only("miss_curve", {JobKind::kPlan, JobKind::kSimulate})) m.get("miss_curve", &s.miss_curve);
  if (only("limits", {JobKind::kPlan})) m.get_choice("limits", &s.limits, {"all", "memory"});
  if (only("row_bytes", {JobKind::kReplay})) m.get("row_bytes", &s.row_bytes, 1, int64_t{1} << 30);
  if (only("shard_requests", {JobKind::kReplay})) m.get("shard_requests", &s.shard_requests, 1, int64_t{1} << 40);
  if (only("lookahead_mb", {JobKind::kReplay})) m.get("lookahead_mb", &s.lookahead_mb, 1, int64_t{1} << 30);
  if (only("duration_s", {JobKind::kSimulate})) m.get("duration_s", &s.duration_s, 0, 1e9);
  if (only("num_requests", {JobKind::kSimulate})) m.get("num_requests", &s.num_requests, 1, int64_t{1} << 40);
  m.finish();
  return s;
}

/// One axis of the product: its names (several for a zip group) and, per step, the value nodes.
struct Axis {
  std::vector<std::string> names;
  std::vector<std::string> paths;               // key path per name, for errors
  std::vector<std::vector<YAML::Node>> values;  // [step][name]
};

void check_axis_name(const std::string& file, const std::string& path, const YAML::Node& key, JobKind kind,
                     std::set<std::string>& seen) {
  const std::string a = key.Scalar();
  const auto& names = axis_names();
  if (std::find(names.begin(), names.end(), a) == names.end())
    throw_error("{}: {}{}: unknown axis '{}' (expected one of {})", file, path, line_of(key), a, fmt::join(names, ", "));
  if (!axis_applies(kind, a)) {
    std::vector<std::string> ok;
    for (const auto& n : names)
      if (axis_applies(kind, n)) ok.push_back(n);
    throw_error("{}: {}{}: axis '{}' does not apply to a {} job (expected one of {})", file, path, line_of(key), a,
                to_string(kind), fmt::join(ok, ", "));
  }
  if (!seen.insert(a).second)
    throw_error("{}: {}{}: axis '{}' is given twice in this job (grid and zip name each axis once)", file, path,
                line_of(key), a);
}

std::vector<YAML::Node> as_list(const YAML::Node& v, const std::string& file, const std::string& path) {
  std::vector<YAML::Node> out;
  if (v.IsSequence()) {
    for (const auto& x : v) out.push_back(x);
    if (out.empty()) fail(file, path, v, "a non-empty list of values");
  } else if (v.IsScalar()) {
    out.push_back(v);  // one value: an axis that does not vary
  } else {
    fail(file, path, v, "a value or a list of values");
  }
  return out;
}

}  // namespace

bool parse_token_count(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  std::string t = text;
  int64_t mult = 1;
  const char last = t.back();
  if (last == 'K' || last == 'k') mult = 1024;
  if (last == 'M' || last == 'm') mult = 1024 * 1024;
  if (mult > 1) t.pop_back();
  int64_t v = 0;
  if (!parse_int(t, &v) || v < 0 || v > (int64_t{1} << 40)) return false;
  *out = v * mult;
  return true;
}

std::string axis_value(const GridPoint& p, const std::string& axis) {
  if (!axis_applies(p.kind, axis)) return "";
  if (axis == "scenario") return p.scenario;
  if (axis == "workload") return p.workload;
  if (axis == "trace") return p.trace;
  if (axis == "context") return p.context ? fmt::format("{}", p.context) : "";
  if (axis == "device_buffer_size") return p.device_buffer_size ? fmt::format("{}", p.device_buffer_size) : "";
  if (axis == "host_to_device_ratio") return p.host_to_device_ratio ? fmt::format("{}", p.host_to_device_ratio) : "";
  if (axis == "policy") return p.policy;
  if (axis == "concurrency") return fmt::format("{}", p.concurrency);
  if (axis == "mode") return p.mode;
  return "";
}

std::string describe_point(const GridPoint& p) {
  std::string s = fmt::format("point {} (job {}, kind={}", p.index, p.job, to_string(p.kind));
  for (const auto& a : axis_names()) {
    const std::string v = axis_value(p, a);
    if (!v.empty()) s += fmt::format(" {}={}", a, v);
  }
  return s + ")";
}

namespace {

/// The product's axes of one job: grid keys in file order, then each zip group as one axis.
std::vector<Axis> job_axes(StrictMap& jm, const YAML::Node& job, const std::string& file, const std::string& jpath,
                           JobKind kind) {
  std::vector<Axis> axes;
  std::set<std::string> seen;
  if (jm.has("grid")) {
    const YAML::Node grid = job["grid"];
    (void)jm.child("grid");  // marks the key as known; rejects a non-mapping and repeated axes
    for (const auto& kv : grid) {
      const std::string path = fmt::format("{}.grid.{}", jpath, kv.first.Scalar());
      check_axis_name(file, jpath + ".grid", kv.first, kind, seen);
      Axis ax;
      ax.names = {kv.first.Scalar()};
      ax.paths = {path};
      for (const auto& v : as_list(kv.second, file, path)) ax.values.push_back({v});
      axes.push_back(std::move(ax));
    }
  }
  const YAML::Node zips = jm.sequence("zip");
  for (size_t z = 0; z < zips.size(); ++z) {
    const std::string zpath = fmt::format("{}.zip[{}]", jpath, z);
    if (!zips[z].IsMap() || zips[z].size() == 0) fail(file, zpath, zips[z], "a mapping of axes to lists of equal length");
    StrictMap zm(zips[z], file, zpath);  // rejects repeated keys
    (void)zm;
    Axis ax;
    size_t len = 0;
    for (const auto& kv : zips[z]) {
      const std::string path = fmt::format("{}.{}", zpath, kv.first.Scalar());
      check_axis_name(file, zpath, kv.first, kind, seen);
      const auto vals = as_list(kv.second, file, path);
      if (ax.names.empty()) {
        len = vals.size();
        ax.values.resize(len);
      } else if (vals.size() != len) {
        throw_error("{}: {}{}: got {} values, expected {} (the lists of a zip advance together: same length as '{}')",
                    file, path, line_of(kv.second), vals.size(), len, ax.names.front());
      }
      ax.names.push_back(kv.first.Scalar());
      ax.paths.push_back(path);
      for (size_t i = 0; i < len; ++i) ax.values[i].push_back(vals[i]);
    }
    axes.push_back(std::move(ax));
  }
  return axes;
}

/// Checks a point has every axis its kind needs (and a replay point's trace fits its buffer and scenario) and
/// appends it to the grid.
void add_point(Grid& g, const Resolver& r, GridPoint p, const std::string& where) {
  const std::string& file = g.file;
  for (const auto& a : required_axes().at(p.kind)) {
    if (axis_value(p, a).empty() || (a == "device_buffer_size" && p.device_buffer_size == 0))
      throw_error("{}: {}: a {} point needs axis '{}' (none given)", file, where, to_string(p.kind), a);
  }
  if (p.kind == JobKind::kReplay) {
    const int32_t K = r.trace_top_k.at(p.trace_path);
    if (p.device_buffer_size < K)
      throw_error("{}: {}: device_buffer_size {} is smaller than trace {}'s top_k {} (expected >= top_k: the swap-in "
                  "contract)",
                  file, where, p.device_buffer_size, p.trace, K);
    if (!p.scenario.empty() && r.scenario_top_k.at(p.scenario) != K)
      throw_error("{}: {}: trace {} has top_k {} but scenario {} runs top_k {} (expected a trace recorded at the "
                  "scenario's top_k)",
                  file, where, p.trace, K, p.scenario, r.scenario_top_k.at(p.scenario));
  }
  p.index = static_cast<int64_t>(g.points.size());
  g.points.push_back(std::move(p));
}

/// Odometer over the axes, the last one fastest: the first axis written is the outermost loop.
void add_product(Grid& g, Resolver& r, const GridPoint& base, const std::vector<Axis>& axes, const std::string& jpath) {
  if (axes.empty()) return;
  std::vector<size_t> at(axes.size(), 0);
  bool done = false;
  while (!done) {
    GridPoint p = base;
    std::string where = jpath + " point";
    for (size_t a = 0; a < axes.size(); ++a)
      for (size_t k = 0; k < axes[a].names.size(); ++k) {
        const std::string path = axes[a].values.size() > 1 ? fmt::format("{}[{}]", axes[a].paths[k], at[a])
                                                            : axes[a].paths[k];
        set_axis(p, axes[a].names[k], axes[a].values[at[a]][k], g.file, path, r);
        where += fmt::format(" {}={}", axes[a].names[k], axes[a].values[at[a]][k].Scalar());
      }
    add_point(g, r, std::move(p), where);
    size_t a = axes.size();
    while (true) {
      if (a == 0) {
        done = true;
        break;
      }
      --a;
      if (++at[a] < axes[a].values.size()) break;
      at[a] = 0;
    }
  }
}

void add_explicit_points(Grid& g, Resolver& r, const GridPoint& base, const YAML::Node& explicit_points,
                         const std::string& jpath) {
  for (size_t i = 0; i < explicit_points.size(); ++i) {
    const std::string ppath = fmt::format("{}.points[{}]", jpath, i);
    const YAML::Node pn = explicit_points[i];
    if (!pn.IsMap() || pn.size() == 0) fail(g.file, ppath, pn, "a mapping of axes to single values");
    StrictMap pm(pn, g.file, ppath);
    (void)pm;
    GridPoint p = base;
    std::set<std::string> pseen;
    for (const auto& kv : pn) {
      check_axis_name(g.file, ppath, kv.first, base.kind, pseen);
      set_axis(p, kv.first.Scalar(), kv.second, g.file, ppath + "." + kv.first.Scalar(), r);
    }
    add_point(g, r, std::move(p), ppath);
  }
}

}  // namespace

Grid parse_grid(const std::string& yaml_text, const std::string& file, const std::string& base_dir) {
  StrictMap root(load_yaml_string(yaml_text, file), file, "");
  Grid g;
  g.file = file;
  g.text = yaml_text;
  root.require("sweep");
  root.get("sweep", &g.name);
  if (g.name.empty()) throw_error("{}: sweep: got an empty name, expected the sweep's name", file);
  if (root.has("description")) root.get("description", &g.description);
  if (root.has("replay_shard_requests")) root.get("replay_shard_requests", &g.replay_shard_requests, 1, int64_t{1} << 40);
  root.require("jobs");
  const YAML::Node jobs = root.sequence("jobs");
  root.finish();
  if (jobs.size() == 0) throw_error("{}: jobs: got an empty list, expected at least one job", file);

  Resolver r{file, base_dir, {}, {}};
  std::set<std::string> job_names;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const std::string jpath = fmt::format("jobs[{}]", j);
    StrictMap jm(jobs[j], file, jpath);
    std::string kind_text, name = jpath;
    jm.require("kind");
    jm.get_choice("kind", &kind_text, {"plan", "replay", "simulate"});
    const JobKind kind = kind_text == "plan" ? JobKind::kPlan : kind_text == "replay" ? JobKind::kReplay : JobKind::kSimulate;
    if (jm.has("name")) jm.get("name", &name);
    if (!job_names.insert(name).second) throw_error("{}: job name '{}' is used twice (names tell jobs apart)", jm.where("name"), name);
    const JobSettings settings = read_settings(jm.child("settings"), kind);
    const std::vector<Axis> axes = job_axes(jm, jobs[j], file, jpath, kind);
    const YAML::Node explicit_points = jm.sequence("points");
    jm.finish();
    if (axes.empty() && explicit_points.size() == 0)
      throw_error("{}: {}: a job needs points: a grid, a zip or a points list", file, jpath);
    GridPoint base;
    base.kind = kind;
    base.job = name;
    base.job_index = static_cast<int32_t>(j);
    base.settings = settings;
    add_product(g, r, base, axes, jpath);
    add_explicit_points(g, r, base, explicit_points, jpath);
  }
  return g;
}

Grid load_grid(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw_error("{}: no such grid file (expected a sweep YAML, docs/sweep.md)", path);
  const YAML::Node probe = load_yaml_file(path);  // names the file and line on a syntax error
  (void)probe;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const fs::path dir = fs::path(path).parent_path();
  return parse_grid(text, path, dir.empty() ? "." : dir.string());
}

}  // namespace hisparse::sim::sweep
