// @brief with_recorded_errors and record_errors (see field_record.h).
#include "sim/fidelity/field_record.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"

namespace hisparse::sim {

namespace {

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

}  // namespace

std::string with_recorded_errors(const std::string& text, const std::string& file,
                                 const std::vector<std::pair<FieldPoint, double>>& errors) {
  std::vector<std::string> lines = split_lines(text);
  std::vector<std::pair<FieldPoint, double>> sorted = errors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first.line < b.first.line; });
  static const std::regex recorded(R"(^(\s*(?:-\s+)?recorded_error_pct:\s*)([^\s#]*)(.*)$)");
  static const std::regex tolerance(R"(^(\s*)(-\s+)?tolerance_pct:.*$)");
  // Bottom-up, so an inserted line does not move the points still to edit.
  for (size_t i = sorted.size(); i-- > 0;) {
    const FieldPoint& p = sorted[i].first;
    const std::string value = fmt::format("{:.1f}", std::round(sorted[i].second * 10) / 10 + 0.0);
    const size_t begin = static_cast<size_t>(std::max(p.line - 1, 0));
    const size_t end = i + 1 < sorted.size() ? static_cast<size_t>(sorted[i + 1].first.line - 1) : lines.size();
    bool done = false;
    for (size_t k = begin; k < std::min(end, lines.size()) && !done; ++k) {
      std::smatch m;
      if (std::regex_match(lines[k], m, recorded)) {
        lines[k] = m[1].str() + value + m[3].str();
        done = true;
      }
    }
    for (size_t k = begin; k < std::min(end, lines.size()) && !done; ++k) {
      std::smatch m;
      if (std::regex_match(lines[k], m, tolerance)) {
        // The new key lines up with tolerance_pct (past its "- " when the point starts there).
        const std::string indent = m[1].str() + std::string(m[2].length(), ' ');
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(k) + 1, indent + "recorded_error_pct: " + value);
        done = true;
      }
    }
    if (!done)
      throw_error("{}: point '{}' (line {}): no `tolerance_pct:` line of its own to put recorded_error_pct after "
                  "(write the point in block style, one key per line)",
                  file, p.id, p.line);
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  if (!text.empty() && text.back() != '\n') out.pop_back();
  return out;
}

std::vector<std::string> record_errors(const std::vector<RunResult>& runs) {
  std::vector<std::string> written;
  for (const RunResult& r : runs) {
    std::vector<std::pair<FieldPoint, double>> errors;
    for (const PointResult& p : r.points) errors.emplace_back(p.point, p.error_pct);
    write_file_atomically(r.run.file, with_recorded_errors(read_file(r.run.file), r.run.file, errors));
    written.push_back(r.run.file);
  }
  return written;
}

}  // namespace hisparse::sim
