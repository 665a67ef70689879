// @brief Op-table series: grouping checked rows by op and shape, finding a shape, reading a grid point (see
// op_table.h).
#include "sim/optables/op_table.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {
namespace {

std::string where_rows(const OpSeries& s) {
  return fmt::format("{} (op {}, params '{}')", s.table ? s.table->path : "?", s.op, format_op_params(s.params));
}

std::vector<double> distinct(const std::vector<OpRow>& rows, int64_t OpRow::*field) {
  std::set<double> v;
  for (const OpRow& r : rows) v.insert(static_cast<double>(r.*field));
  return {v.begin(), v.end()};
}

}  // namespace

OpParams parse_op_params(const std::string& text, const std::string& where) {
  OpParams out;
  if (text.empty()) return out;
  std::string prev;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string part = text.substr(start, end - start);
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
      throw_error("{}: '{}' is not key=value (expected parameters as key=value joined by ';')", where, part);
    const std::string key = part.substr(0, eq);
    if (!prev.empty() && key <= prev)
      throw_error("{}: key '{}' after '{}' (expected the keys sorted and each once)", where, key, prev);
    out[key] = part.substr(eq + 1);
    prev = key;
    start = end + 1;
  }
  return out;
}

std::string format_op_params(const OpParams& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : ";") + k + "=" + v;
  return s;
}

const char* to_string(OpLabel label) {
  switch (label) {
    case OpLabel::kMeasured: return "measured";
    case OpLabel::kExtrapolated: return "modelled (extrapolated)";
    case OpLabel::kFromRanks: return "modelled (from fewer-GPU measurements)";
    case OpLabel::kAbsent: break;
  }
  return "absent";
}

int OpSeries::first_line() const {
  int l = rows.front().line;
  for (const OpRow& r : rows) l = std::min(l, r.line);
  return l;
}

int OpSeries::last_line() const {
  int l = rows.front().line;
  for (const OpRow& r : rows) l = std::max(l, r.line);
  return l;
}

std::string OpSeries::grid_text() const {
  auto span = [](const char* name, const std::vector<double>& v) {
    return v.size() == 1 ? fmt::format("{} {:g}", name, v.front()) : fmt::format("{} {:g}–{:g}", name, v.front(), v.back());
  };
  switch (grid) {
    case OpGrid::kBatch: return span("batch", batches);
    case OpGrid::kContext: return span("context", contexts);
    case OpGrid::kBatchContext: return span("batch", batches) + " × " + span("context", contexts);
    case OpGrid::kBytes: return span("bytes", bytes);
    case OpGrid::kPoint: break;
  }
  return "one point";
}

void OpTableSet::add_table(std::shared_ptr<const OpTableEntry> entry, std::vector<OpRow> rows) {
  tables_.push_back(entry);
  std::map<std::pair<std::string, std::string>, std::vector<OpRow>> groups;  // (op, params) -> rows, file order
  for (OpRow& r : rows) groups[{r.op, format_op_params(r.params)}].push_back(std::move(r));
  for (auto& [key, group] : groups) {
    OpSeries s;
    s.op = key.first;
    s.params = group.front().params;
    s.table = entry.get();
    s.library = group.front().library;
    s.commit = group.front().commit;
    s.gpu = group.front().gpu;
    s.driver = group.front().driver;
    for (const OpRow& r : group)
      if (r.library != s.library || r.commit != s.commit)
        throw_error("{}: line {} is {} {}, line {} {} {} (expected one library commit per op and shape)", where_rows(s),
                    r.line, r.library, r.commit, group.front().line, s.library, s.commit);
    std::sort(group.begin(), group.end(), [](const OpRow& a, const OpRow& b) {
      return std::tie(a.context, a.batch, a.bytes) < std::tie(b.context, b.batch, b.bytes);
    });
    for (size_t i = 1; i < group.size(); ++i) {
      const OpRow& a = group[i - 1];
      const OpRow& b = group[i];
      if (a.batch == b.batch && a.context == b.context && a.bytes == b.bytes)
        throw_error("{}: lines {} and {} both time batch {}, context {}, bytes {} (expected each grid point once)",
                    where_rows(s), a.line, b.line, b.batch, b.context, b.bytes);
    }
    s.rows = std::move(group);
    s.batches = distinct(s.rows, &OpRow::batch);
    s.contexts = distinct(s.rows, &OpRow::context);
    s.bytes = distinct(s.rows, &OpRow::bytes);
    const bool vb = s.batches.size() > 1, vc = s.contexts.size() > 1, vy = s.bytes.size() > 1;
    if (vy && (vb || vc))
      throw_error("{}: varies bytes together with batch or context (expected collectives over bytes alone)",
                  where_rows(s));
    s.grid = vy ? OpGrid::kBytes : vb && vc ? OpGrid::kBatchContext : vb ? OpGrid::kBatch : vc ? OpGrid::kContext
                                                                                             : OpGrid::kPoint;
    if (s.grid == OpGrid::kBytes)
      for (const OpRow& r : s.rows)
        if (r.bytes <= 0)
          throw_error("{}: line {} has bytes {} in a series over bytes (expected > 0: interpolated in log bytes)",
                      where_rows(s), r.line, r.bytes);
    if (s.grid == OpGrid::kBatchContext && s.rows.size() != s.batches.size() * s.contexts.size())
      throw_error("{}: {} rows over {} batches × {} contexts (expected the full rectangle: bilinear reading needs "
                  "every batch at every context)",
                  where_rows(s), s.rows.size(), s.batches.size(), s.contexts.size());
    for (const OpSeries& other : series_)
      if (other.op == s.op && other.params == s.params)
        throw_error("{}: op {} with params '{}' is also in {} (expected each shape in one table)", entry->path, s.op,
                    format_op_params(s.params), other.table->path);
    series_.push_back(std::move(s));
  }
}

std::vector<const OpSeries*> OpTableSet::series_of(const std::string& op) const {
  std::vector<const OpSeries*> out;
  for (const OpSeries& s : series_)
    if (s.op == op) out.push_back(&s);
  return out;
}

const OpSeries* OpTableSet::find(const std::string& op, const OpParams& params, const OpParams& prefer,
                                 std::string* why) const {
  std::vector<const OpSeries*> hits;
  bool any_op = false;
  for (const OpSeries& s : series_) {
    if (s.op != op) continue;
    any_op = true;
    bool ok = true;
    for (const auto& [k, v] : params) {
      const auto it = s.params.find(k);
      if (it == s.params.end() || it->second != v) ok = false;
    }
    if (ok) hits.push_back(&s);
  }
  // Narrow several matches by the preferred keys, one at a time, skipping a key none of them carries.
  for (const auto& [k, v] : prefer) {
    if (hits.size() <= 1) break;
    std::vector<const OpSeries*> kept;
    for (const OpSeries* s : hits) {
      const auto it = s->params.find(k);
      if (it != s->params.end() && it->second == v) kept.push_back(s);
    }
    if (!kept.empty()) hits = std::move(kept);
  }
  if (hits.size() == 1) return hits.front();
  if (why)
    *why = !any_op      ? fmt::format("no row of {}", op)
           : hits.empty() ? fmt::format("no row of {} with {}", op, format_op_params(params))
                          : fmt::format("{} shapes of {} match {}", hits.size(), op, format_op_params(params));
  return nullptr;
}

OpLookup OpTableSet::lookup(const std::string& op, const OpParams& params, double batch, double context, double bytes,
                            const OpParams& prefer) const {
  OpLookup out;
  const OpSeries* s = find(op, params, prefer, &out.note);
  return s ? at(*s, batch, context, bytes) : out;
}

OpLookup OpTableSet::at(const OpSeries& s, double batch, double context, double bytes) {
  OpLookup out;
  out.series = &s;
  auto axis = [&](int64_t OpRow::*field, const std::vector<const OpRow*>& rows) {
    std::vector<AxisPoint> pts;
    for (const OpRow* r : rows)
      pts.push_back({static_cast<double>(r->*field), r->median_us, r->line});
    return pts;
  };
  std::vector<const OpRow*> all;
  for (const OpRow& r : s.rows) all.push_back(&r);
  AxisValue v;
  std::vector<int> lines;
  switch (s.grid) {
    case OpGrid::kPoint:  // the one point; its non-zero grid values are checked below like any fixed one
      v = {s.rows.front().median_us, AxisPlace::kInside, s.rows.front().line, s.rows.front().line};
      break;
    case OpGrid::kBatch: v = interpolate_axis(axis(&OpRow::batch, all), batch); break;
    case OpGrid::kContext: v = interpolate_axis(axis(&OpRow::context, all), context); break;
    case OpGrid::kBytes: v = interpolate_axis(axis(&OpRow::bytes, all), bytes, /*log_log=*/true); break;
    case OpGrid::kBatchContext: {
      // Bilinear: along batch at every measured context, then along context through those values.
      std::vector<AxisPoint> by_context;
      AxisPlace place = AxisPlace::kInside;
      for (double c : s.contexts) {
        std::vector<const OpRow*> line;
        for (const OpRow& r : s.rows)
          if (static_cast<double>(r.context) == c) line.push_back(&r);
        const AxisValue b = interpolate_axis(axis(&OpRow::batch, line), batch);
        place = worse(place, b.place);
        by_context.push_back({c, b.us, static_cast<int>(by_context.size())});
        lines.push_back(b.row_lo);
        lines.push_back(b.row_hi);
      }
      const AxisValue c = interpolate_axis(by_context, context);
      v.us = c.us;
      v.place = worse(place, c.place);
      // The rows read: the batch pair of each of the (one or two) contexts used.
      std::vector<int> used;
      for (int i : {c.row_lo, c.row_hi})
        if (i >= 0) used.insert(used.end(), {lines[2 * i], lines[2 * i + 1]});
      lines = used;
      break;
    }
  }
  if (s.grid != OpGrid::kBatchContext) lines = {v.row_lo, v.row_hi};
  // A grid variable the series holds at one non-zero value is a one-point axis: below it the floor, above it no
  // data. Held at 0 it is a variable the op does not use, and the query's value is ignored.
  const OpRow& r0 = s.rows.front();
  for (auto [varies, fixed, q] : {std::tuple{s.batches.size() > 1, r0.batch, batch},
                                  std::tuple{s.contexts.size() > 1, r0.context, context},
                                  std::tuple{s.bytes.size() > 1, r0.bytes, bytes}}) {
    if (varies || fixed == 0) continue;
    if (q > static_cast<double>(fixed)) v.place = AxisPlace::kNoData;
    else if (q < static_cast<double>(fixed)) v.place = worse(v.place, AxisPlace::kFloor);
  }
  if (v.place == AxisPlace::kNoData) {
    out.series = nullptr;
    out.note = fmt::format("{} ({}) was timed at one point of a grid variable this query exceeds", s.op,
                           format_op_params(s.params));
    return out;
  }
  out.us = v.us;
  out.label = v.place == AxisPlace::kAbove ? OpLabel::kExtrapolated : OpLabel::kMeasured;
  lines.erase(std::remove(lines.begin(), lines.end(), -1), lines.end());
  if (!lines.empty()) {
    out.first_line = *std::min_element(lines.begin(), lines.end());
    out.last_line = *std::max_element(lines.begin(), lines.end());
  }
  return out;
}

}  // namespace hisparse::sim
