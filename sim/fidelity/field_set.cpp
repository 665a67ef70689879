// @brief load_field_run and load_field_set (see field_set.h; the schema is docs/fidelity.md).
#include "sim/fidelity/field_set.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {

namespace fs = std::filesystem;

double metric_band_pct(FieldMetric m) {
  switch (m) {
    case FieldMetric::kTpotMs: return 10;
    case FieldMetric::kTokensPerS: return 10;
    case FieldMetric::kGain: return 15;
    case FieldMetric::kMaxConcurrency: return 5;
    case FieldMetric::kPoolTokens: return 5;
  }
  return 0;
}

bool is_plausible_key(const std::string& key) {
  const auto& k = field_override_keys();
  return key == "context" || std::find(k.begin(), k.end(), key) != k.end();
}

const char* to_string(FieldMetric m) {
  switch (m) {
    case FieldMetric::kTpotMs: return "tpot_ms";
    case FieldMetric::kTokensPerS: return "tokens_per_s";
    case FieldMetric::kGain: return "gain";
    case FieldMetric::kMaxConcurrency: return "max_concurrency";
    case FieldMetric::kPoolTokens: return "pool_tokens";
  }
  return "?";
}

namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;    // 16M tokens: beyond any model's context
constexpr int64_t kMaxClients = 1 << 20;

FieldMetric parse_metric(const std::string& s) {
  for (FieldMetric m : {FieldMetric::kTpotMs, FieldMetric::kTokensPerS, FieldMetric::kGain, FieldMetric::kMaxConcurrency,
                        FieldMetric::kPoolTokens})
    if (s == to_string(m)) return m;
  return FieldMetric::kTpotMs;  // unreachable: get_choice checked the name
}

/// `plausible:` — a mapping of setup item → list of the values it may have had (at least two).
std::vector<PlausibleItem> read_plausible(const YAML::Node& node, const std::string& where) {
  std::vector<PlausibleItem> items;
  if (!node.IsMap())
    throw_error("{} (line {}): got {}, expected a mapping of setup item to its list of values", where,
                node.Mark().line + 1, describe_node(node));
  for (const auto& kv : node) {
    PlausibleItem item;
    item.key = kv.first.Scalar();
    const int line = kv.first.Mark().line + 1;
    if (!is_plausible_key(item.key))
      throw_error("{}.{} (line {}): not a setup item; expected `context` or an overrides key ({})", where, item.key,
                  line, fmt::join(field_override_keys(), ", "));
    if (!kv.second.IsSequence() || kv.second.size() < 2)
      throw_error("{}.{} (line {}): got {}, expected a list of at least two values (one value is a setting: put it "
                  "under overrides:)", where, item.key, line, describe_node(kv.second));
    for (const YAML::Node& v : kv.second) {
      if (!v.IsScalar())
        throw_error("{}.{} (line {}): got {}, expected a scalar value", where, item.key, line, describe_node(v));
      item.values.push_back(v.Scalar());
    }
    items.push_back(std::move(item));
  }
  return items;
}

FieldPoint read_point(const YAML::Node& node, const std::string& file, size_t index, const FieldRun& run) {
  StrictMap m(node, file, fmt::format("points[{}]", index));
  FieldPoint p;
  p.line = node.Mark().line + 1;
  m.require("id");
  m.get("id", &p.id);
  if (p.id.empty()) throw_error("{}: empty id (line {})", m.where("id"), p.line);
  m.require("metric");
  std::string metric;
  m.get_choice("metric", &metric, {"tpot_ms", "tokens_per_s", "gain", "max_concurrency", "pool_tokens"});
  p.metric = parse_metric(metric);
  if (p.metric == FieldMetric::kGain) {
    if (m.has("mode"))
      throw_error("{} (point '{}', line {}): a gain is always HiSparse over full KV; omit mode", m.where("mode"), p.id,
                  p.line);
  } else {
    m.require("mode");
    std::string mode;
    m.get_choice("mode", &mode, {"hisparse", "full"});
    p.mode = mode == "full" ? KvMode::kFull : KvMode::kHiSparse;
  }
  if (is_capacity_metric(p.metric)) {
    if (m.has("concurrency"))
      throw_error("{} (point '{}', line {}): {} is the plan's capacity, not a load; omit concurrency",
                  m.where("concurrency"), p.id, p.line, to_string(p.metric));
  } else {
    m.require("concurrency");
    m.get("concurrency", &p.concurrency, 1, kMaxClients);
  }
  p.context_given = m.has("context");
  m.get("context", &p.context, 1, kMaxTokens);
  if (!p.context_given) p.context = int64_t{run.input_tokens} + run.output_tokens / 2;
  const bool one = m.has("published"), range = m.has("published_range");
  if (one == range)
    throw_error("{}: points[{}] (point '{}', line {}): give exactly one of published and published_range (got {})",
                file, index, p.id, p.line, one ? "both" : "neither");
  if (one) {
    double v = 0;
    m.get("published", &v, 1e-12, 1e15);
    p.published = v;
  } else {
    const YAML::Node r = m.sequence("published_range");
    double lo = 0, hi = 0;
    bool ok = r.size() == 2;
    try {
      if (ok) { lo = r[0].as<double>(); hi = r[1].as<double>(); }
    } catch (const YAML::Exception&) {
      ok = false;
    }
    if (!ok || !(lo > 0) || !(hi >= lo))
      throw_error("{} (line {}): got {}, expected [low, high] with 0 < low <= high", m.where("published_range"),
                  r.Mark().line + 1, describe_node(r));
    p.published_range = std::make_pair(lo, hi);
  }
  m.require("tolerance_pct");
  m.get("tolerance_pct", &p.tolerance_pct, 0, 1000);
  // Bands are per metric (scenarios/field/README.md gives each reason), so no point can widen its own.
  if (p.tolerance_pct != metric_band_pct(p.metric))
    throw_error("{} (point '{}', line {}): got {:g}, expected {:g}, the band of every {} point", m.where("tolerance_pct"),
                p.id, p.line, p.tolerance_pct, metric_band_pct(p.metric), to_string(p.metric));
  if (m.has("recorded_error_pct")) {
    double v = 0;
    m.get("recorded_error_pct", &v, -1e6, 1e6);
    p.recorded_error_pct = v;
  }
  if (m.has("accepted_worse")) {
    StrictMap a = m.child("accepted_worse");
    for (const char* key : {"date", "reason", "from", "to"}) a.require(key);
    AcceptedWorse w;
    a.get("date", &w.date);
    a.get("reason", &w.reason);
    a.get("from", &w.from, -1e6, 1e6);
    a.get("to", &w.to, -1e6, 1e6);
    if (w.reason.empty()) throw_error("{} (point '{}', line {}): empty reason", a.where("reason"), p.id, p.line);
    a.finish();
    p.accepted_worse = w;
  }
  if (m.has("role")) {
    std::string role;
    m.get_choice("role", &role, {"held_out", "fitted"});
    p.role_fitted = role == "fitted";
  }
  m.get("role_reason", &p.role_reason);
  if (p.role_fitted == p.role_reason.empty())
    throw_error("{} (point '{}', line {}): {}", m.where("role_reason"), p.id, p.line,
                p.role_fitted ? "a `role: fitted` point says which deployment field its figure set (role_reason)"
                              : "role_reason is only for a `role: fitted` point");
  m.get("expected_miss", &p.expected_miss);
  if (m.has("expected_miss") && p.expected_miss.empty())
    throw_error("{} (point '{}', line {}): got an empty reason, expected why the point misses, as measured",
                m.where("expected_miss"), p.id, p.line);
  if (m.has("plausible")) {
    m.child("plausible");  // marks the key read; the items are checked here
    p.plausible = read_plausible(node["plausible"], fmt::format("{}: points[{}].plausible", file, index));
  }
  if (m.has("pending")) {
    m.get("pending", &p.pending);
    if (p.pending.empty())
      throw_error("{} (point '{}', line {}): got an empty reason, expected why the point cannot be scored yet",
                  m.where("pending"), p.id, p.line);
    // A pending point is never evaluated, so nothing scored may be written on it.
    for (const char* key : {"recorded_error_pct", "accepted_worse", "expected_miss", "role"})
      if (m.has(key))
        throw_error("{} (point '{}', line {}): a pending point is not scored; remove {} (or the pending reason)",
                    m.where(key), p.id, p.line, key);
  }
  m.finish();
  return p;
}

}  // namespace

FieldRun load_field_run(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  StrictMap m(doc, path, "");
  FieldRun r;
  r.file = path;
  for (const char* key : {"name", "title", "source", "deployment", "workload", "points"}) m.require(key);
  m.get("name", &r.name);
  const std::string stem = fs::path(path).stem().string();
  if (r.name != stem) throw_error("{}: got '{}', expected the file's stem '{}'", m.where("name"), r.name, stem);
  m.get("title", &r.title);
  {
    StrictMap s = m.child("source");
    for (const char* key : {"publication", "url", "date", "quote"}) s.require(key);
    s.get("publication", &r.source.publication);
    s.get("url", &r.source.url);
    s.get("date", &r.source.date);
    s.get("quote", &r.source.quote);
    const std::string& d = r.source.date;
    const bool date_ok = (d.size() == 7 || d.size() == 10) && std::all_of(d.begin(), d.end(), [](char c) {
                           return (c >= '0' && c <= '9') || c == '-';
                         }) && d[4] == '-' && (d.size() == 7 || d[7] == '-');
    if (!date_ok) throw_error("{}: got '{}', expected YYYY-MM-DD or YYYY-MM", s.where("date"), d);
    s.finish();
  }
  m.get("deployment", &r.deployment);
  // A path is read beside the field file; a bare name is a shipped deployment (scenarios/deployments).
  if (r.deployment.find('/') != std::string::npos || fs::path(r.deployment).extension() == ".yaml")
    r.deployment = (fs::path(path).parent_path() / r.deployment).lexically_normal().string();
  if (m.has("overrides")) {
    // Only the names are checked here (the values where they become a ScenarioOverrides, field_set.h).
    const YAML::Node o = doc["overrides"];
    m.child("overrides");  // a mapping without a key twice; marks the key read
    for (const auto& kv : o) {
      const std::string key = kv.first.Scalar();
      const auto& known = field_override_keys();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        throw_error("{}: unknown key 'overrides.{}' (line {}); expected one of: {}", path, key,
                    kv.first.Mark().line + 1, list);
      }
    }
    r.overrides = o;
  }
  {
    StrictMap w = m.child("workload");
    for (const char* key : {"input_tokens", "output_tokens"}) w.require(key);
    w.get("input_tokens", &r.input_tokens, 1, kMaxTokens);
    w.get("output_tokens", &r.output_tokens, 1, kMaxTokens);
    w.get("closed_loop", &r.closed_loop);
    if (w.has("throughput")) w.get_choice("throughput", &r.throughput, {"makespan", "decode_steady", "total_makespan"});
    if (w.has("scored_by")) w.get_choice("scored_by", &r.scored_by, {"plan", "simulate"});
    w.finish();
    // The shape a simulate-scored run is held to (preemption, queueing) exists only in the serving run.
    if (r.scored_by == "simulate" && !r.closed_loop)
      throw_error("{}: got 'simulate' with closed_loop false, expected closed_loop: true (only a closed-loop run is "
                  "simulated)", w.where("scored_by"));
  }
  for (const YAML::Node& a : m.sequence("assumed")) {
    if (!a.IsScalar()) throw_error("{} (line {}): got {}, expected a sentence", m.where("assumed"), a.Mark().line + 1,
                                   describe_node(a));
    r.assumed.push_back(a.Scalar());
  }
  const YAML::Node points = m.sequence("points");
  if (points.size() == 0) throw_error("{}: no point (expected at least one)", m.where("points"));
  std::set<std::string> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    FieldPoint p = read_point(points[i], path, i, r);
    if (!ids.insert(p.id).second) throw_error("{}: points[{}] (line {}): id '{}' appears twice", path, i, p.line, p.id);
    (p.pending.empty() ? r.points : r.pending).push_back(std::move(p));
  }
  if (m.has("plausible")) {
    m.child("plausible");
    r.plausible = read_plausible(doc["plausible"], path + ": plausible");
  }
  if (m.has("derived_overrides")) {
    const YAML::Node d = doc["derived_overrides"];
    m.child("derived_overrides");  // marks the key read; its entries are checked here
    for (const auto& kv : d) {
      const std::string key = kv.first.Scalar();
      const int line = kv.first.Mark().line + 1;
      if (!r.overrides || !r.overrides[key])
        throw_error("{}: derived_overrides.{} (line {}): no such key under overrides:; expected an override this file "
                    "sets", path, key, line);
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw_error("{}: derived_overrides.{} (line {}): got {}, expected a list of this file's point ids", path, key,
                    line, describe_node(kv.second));
      for (const YAML::Node& id : kv.second) {
        if (!id.IsScalar() || ids.count(id.Scalar()) == 0)
          throw_error("{}: derived_overrides.{} (line {}): got {}, expected one of this file's point ids", path, key,
                      line, describe_node(id));
        for (const FieldPoint& p : r.pending)
          if (p.id == id.Scalar())
            throw_error("{}: derived_overrides.{} (line {}): point '{}' is pending (not scored), so no override can "
                        "be read off it", path, key, line, p.id);
        r.derived_overrides.emplace_back(key, id.Scalar());
        // The point set a deployment field, so it must say so where it is written.
        for (const FieldPoint& p : r.points)
          if (p.id == id.Scalar() && !p.role_fitted)
            throw_error("{}: derived_overrides.{} (line {}): point '{}' (line {}) sets this override, so it needs "
                        "`role: fitted` and a role_reason", path, key, line, p.id, p.line);
      }
    }
  }
  m.finish();
  return r;
}

std::vector<FieldRun> load_field_set(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> in_dir;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".yaml" && e.path().filename() != kFitsFileName)
          in_dir.push_back(e.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) throw_error("fidelity: --field {}: no *.yaml field file in the folder", p);
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      throw_error("fidelity: --field {}: no such file or folder", p);
    }
  }
  std::vector<FieldRun> runs;
  std::set<std::string> names;
  for (const std::string& f : files) {
    runs.push_back(load_field_run(f));
    if (!names.insert(runs.back().name).second)
      throw_error("fidelity: {}: run name '{}' is already used by another field file", f, runs.back().name);
  }
  return runs;
}

}  // namespace hisparse::sim
