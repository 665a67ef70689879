// @brief with_recorded_errors and record_errors (see field_record.h).
#include "sim/fidelity/field_record.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"

namespace hisparse::sim {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines, const std::string& original) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  if (!original.empty() && original.back() != '\n') out.pop_back();
  return out;
}

namespace {

/// One `key: value  # comment` line of a block-style YAML point, optionally opening the point with "- ".
struct KeyLine {
  size_t indent = 0;       // leading blanks
  size_t dash = 0;         // length of "- " (with its blanks) when the line opens a list item, else 0
  std::string key;
  size_t value_begin = 0;  // first character of the value (after ':' and blanks)
  size_t value_end = 0;    // one past its last (before blanks or a comment)
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// The key line `line` holds, or nullopt (a comment, a flow mapping, text without a key).
std::optional<KeyLine> key_line(const std::string& line) {
  KeyLine k;
  size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  k.indent = i;
  if (i + 1 < line.size() && line[i] == '-' && is_blank(line[i + 1])) {
    size_t j = i + 1;
    while (j < line.size() && is_blank(line[j])) ++j;
    k.dash = j - i;
    i = j;
  }
  const size_t colon = line.find(':', i);
  if (colon == std::string::npos || colon == i) return std::nullopt;
  k.key = line.substr(i, colon - i);
  if (k.key.find_first_of(" \t#{[") != std::string::npos) return std::nullopt;
  size_t v = colon + 1;
  while (v < line.size() && is_blank(line[v])) ++v;
  size_t e = v;
  while (e < line.size() && !is_blank(line[e]) && line[e] != '#') ++e;
  k.value_begin = v;
  k.value_end = e;
  return k;
}

}  // namespace

std::string with_recorded_errors(const std::string& text, const std::string& file,
                                 const std::vector<std::pair<FieldPoint, double>>& errors,
                                 const std::map<std::string, AcceptedWorse>& accepted) {
  std::vector<std::string> lines = split_lines(text);
  std::vector<std::pair<FieldPoint, double>> sorted = errors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first.line < b.first.line; });
  // Bottom-up, so an inserted line does not move the points still to edit.
  for (size_t i = sorted.size(); i-- > 0;) {
    const FieldPoint& p = sorted[i].first;
    const std::string value = fmt::format("{:.1f}", std::round(sorted[i].second * 10) / 10 + 0.0);
    const size_t begin = static_cast<size_t>(std::max(p.line - 1, 0));
    const size_t end = i + 1 < sorted.size() ? static_cast<size_t>(sorted[i + 1].first.line - 1) : lines.size();
    bool done = false;
    size_t at = 0;        // the recorded_error_pct line
    std::string indent;   // of the point's keys
    for (size_t k = begin; k < std::min(end, lines.size()) && !done; ++k) {
      const std::optional<KeyLine> kl = key_line(lines[k]);
      if (kl && kl->key == "recorded_error_pct") {
        lines[k] = lines[k].substr(0, kl->value_begin) + value + lines[k].substr(kl->value_end);
        indent = lines[k].substr(0, kl->indent) + std::string(kl->dash, ' ');
        at = k;
        done = true;
      }
    }
    for (size_t k = begin; k < std::min(end, lines.size()) && !done; ++k) {
      const std::optional<KeyLine> kl = key_line(lines[k]);
      if (kl && kl->key == "tolerance_pct") {
        // The new key lines up with tolerance_pct (past its "- " when the point starts there).
        indent = lines[k].substr(0, kl->indent) + std::string(kl->dash, ' ');
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(k) + 1, indent + "recorded_error_pct: " + value);
        at = k + 1;
        done = true;
      }
    }
    if (done && accepted.count(p.id)) {
      const AcceptedWorse& w = accepted.at(p.id);
      const std::string line = fmt::format("{}accepted_worse: {{date: {}, reason: {}, from: {:.1f}, to: {:.1f}}}", indent,
                                           w.date, yaml_quote(w.reason), w.from + 0.0, w.to + 0.0);
      // The block ends one line later when recorded_error_pct was inserted.
      const size_t block_end = std::min(lines.size(), end + (lines.size() > 0 ? 1 : 0));
      bool replaced = false;
      for (size_t k = begin; k < block_end && !replaced; ++k) {
        const std::optional<KeyLine> kl = key_line(lines[k]);
        if (kl && kl->key == "accepted_worse") {
          lines[k] = line;
          replaced = true;
        }
      }
      if (!replaced) lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at) + 1, line);
    }
    if (!done)
      throw_error("{}: point '{}' (line {}): no `tolerance_pct:` line of its own to put recorded_error_pct after "
                  "(write the point in block style, one key per line)",
                  file, p.id, p.line);
  }
  return join_lines(lines, text);
}

double recorded_value(const PointResult& p) { return std::round(p.scored_error() * 10) / 10 + 0.0; }

namespace {

bool looser(const PointResult& p) {
  return p.point.recorded_error_pct && std::abs(recorded_value(p)) > std::abs(*p.point.recorded_error_pct) + 1e-9;
}

}  // namespace

std::vector<std::string> looser_than_recorded(const std::vector<RunResult>& runs) {
  std::vector<std::string> out;
  for (const RunResult& r : runs)
    for (const PointResult& p : r.points)
      if (looser(p))
        out.push_back(fmt::format("{}/{} ({} line {}): recorded {:+.1f}, now {:+.1f}", r.run.name, p.point.id,
                                  r.run.file, p.point.line, *p.point.recorded_error_pct, recorded_value(p)));
  return out;
}

std::vector<std::string> record_errors(const std::vector<RunResult>& runs, const AcceptWorse& accept) {
  const std::vector<std::string> worse = looser_than_recorded(runs);
  if (!worse.empty() && accept.reason.empty()) {
    std::string list;
    for (const std::string& w : worse) list += "\n  " + w;
    throw_error("fidelity --record: {} point(s) would be recorded with a larger error than their record; nothing "
                "written (give --accept-worse \"reason\" to record them with the reason):{}",
                worse.size(), list);
  }
  std::vector<std::string> written;
  for (const RunResult& r : runs) {
    std::vector<std::pair<FieldPoint, double>> errors;
    std::map<std::string, AcceptedWorse> accepted;
    for (const PointResult& p : r.points) {
      errors.emplace_back(p.point, recorded_value(p));
      if (looser(p)) accepted[p.point.id] = {accept.date, accept.reason, *p.point.recorded_error_pct, recorded_value(p)};
    }
    write_file_atomically(r.run.file, with_recorded_errors(read_file(r.run.file), r.run.file, errors, accepted));
    written.push_back(r.run.file);
  }
  return written;
}

}  // namespace hisparse::sim
