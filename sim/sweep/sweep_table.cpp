// @brief CSV, JSON and Markdown renderings of a sweep's rows (sweep_table.h).
#include "sim/sweep/sweep_table.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/json_writer.h"
#include "core/io/output_file.h"

namespace hisparse::sim::sweep {

namespace {

const std::vector<JobKind> kKinds = {JobKind::kPlan, JobKind::kReplay, JobKind::kSimulate};

void check_rows(const Grid& g, const std::vector<PointRow>& rows) {
  if (rows.size() != g.points.size())
    throw_error("sweep table: {} rows for {} points", rows.size(), g.points.size());
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].point != static_cast<int64_t>(i)) throw_error("sweep table: row {} holds point {}", i, rows[i].point);
}

/// Axes that apply to at least one point of the grid, in axis_names() order.
std::vector<std::string> used_axes(const Grid& g, const std::vector<JobKind>& kinds) {
  std::vector<std::string> out;
  for (const auto& a : axis_names())
    for (JobKind k : kinds)
      if (axis_applies(k, a)) {
        out.push_back(a);
        break;
      }
  (void)g;
  return out;
}

std::vector<JobKind> kinds_present(const Grid& g) {
  std::vector<JobKind> out;
  for (JobKind k : kKinds)
    if (std::any_of(g.points.begin(), g.points.end(), [&](const GridPoint& p) { return p.kind == k; })) out.push_back(k);
  return out;
}

std::string metric_of(const PointRow& r, const std::string& key) {
  for (const auto& m : r.metrics)
    if (m.key == key) return m.value;
  return "";
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

/// A JSON number when the text is one (the metrics are formatted numbers, copied as they are), else a string.
void json_value(JsonWriter& j, const std::string& s) {
  if (s.empty()) {
    j.null();
    return;
  }
  bool number = true, digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') digit = true;
    else if (!(c == '.' || (c == '-' && i == 0))) number = false;
  }
  if (number && digit) j.raw(s); else j.string(s);
}

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return o;
}

}  // namespace

std::string table_csv(const Grid& g, const std::vector<PointRow>& rows) {
  check_rows(g, rows);
  const auto kinds = kinds_present(g);
  const auto axes = used_axes(g, kinds);
  std::vector<std::string> metrics;
  for (JobKind k : kinds)
    for (const auto& m : metric_columns(k))
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  std::string s = "point,job,kind";
  for (const auto& a : axes) s += "," + a;
  s += ",status,basis";
  for (const auto& m : metrics) s += "," + m;
  s += ",error\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const GridPoint& p = g.points[i];
    const PointRow& r = rows[i];
    s += fmt::format("{},{},{}", p.index, csv_cell(p.job), to_string(p.kind));
    for (const auto& a : axes) s += "," + csv_cell(axis_value(p, a));
    s += fmt::format(",{},{}", r.ok ? "ok" : "failed", csv_cell(r.basis));
    for (const auto& m : metrics) s += "," + csv_cell(metric_of(r, m));
    s += "," + csv_cell(r.error) + "\n";
  }
  return s;
}

std::string table_json(const Grid& g, const std::vector<PointRow>& rows) {
  check_rows(g, rows);
  int64_t failed = 0;
  for (const auto& r : rows) failed += !r.ok;
  using Layout = JsonWriter::Layout;
  JsonWriter j(2);
  j.begin_object()
      .member("sweep", g.name)
      .member("description", g.description)
      .member("points", static_cast<uint64_t>(rows.size()))
      .member("failed", failed);
  j.key("rows").begin_array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const GridPoint& p = g.points[i];
    const PointRow& r = rows[i];
    j.begin_object(Layout::kInline).member("point", p.index).member("job", p.job).member("kind", to_string(p.kind));
    j.key("params").begin_object(Layout::kInline);
    for (const auto& a : axis_names())
      if (axis_applies(p.kind, a)) json_value(j.key(a), axis_value(p, a));
    j.end_object().member("status", r.ok ? "ok" : "failed").member("basis", r.basis);
    if (!r.ok) j.member("error", r.error);
    j.key("metrics").begin_object(Layout::kInline);
    for (const Metric& m : r.metrics) json_value(j.key(m.key), m.value);
    j.end_object().end_object();
  }
  j.end_array().end_object();
  return j.str() + "\n";
}

std::string table_markdown(const Grid& g, const std::vector<PointRow>& rows) {
  check_rows(g, rows);
  std::string s = fmt::format("# Sweep {}\n\n", g.name);
  if (!g.description.empty()) s += g.description + "\n\n";
  for (JobKind k : kinds_present(g)) {
    const char* label = k == JobKind::kReplay ? "measured: counted by replaying the trace through the buffer model"
                                              : "modelled: the project's cost model, not a measurement";
    s += fmt::format("## {} points ({})\n\n", to_string(k), label);
    std::vector<std::string> axes;
    for (const auto& a : axis_names())
      if (axis_applies(k, a)) axes.push_back(a);
    const auto& metrics = metric_columns(k);
    s += "| point | job";
    for (const auto& a : axes) s += " | " + a;
    s += " | status";
    for (const auto& m : metrics) s += " | " + m;
    s += " |\n|---|---";
    for (size_t i = 0; i < axes.size() + 1 + metrics.size(); ++i) s += "|---";
    s += "|\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const GridPoint& p = g.points[i];
      if (p.kind != k) continue;
      s += fmt::format("| {} | {}", p.index, md_cell(p.job));
      for (const auto& a : axes) s += " | " + md_cell(axis_value(p, a));
      s += rows[i].ok ? " | ok" : " | **failed**";
      for (const auto& m : metrics) s += " | " + md_cell(metric_of(rows[i], m));
      s += " |\n";
    }
    s += "\n";
  }
  bool any_failed = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].ok) continue;
    if (!any_failed) s += "## Failed points\n\n";
    any_failed = true;
    s += fmt::format("- {}: {}\n", describe_point(g.points[i]), md_cell(rows[i].error));
  }
  if (any_failed) s += "\n";
  return s;
}

}  // namespace hisparse::sim::sweep
