// @brief Splitting one line of the benchmark CSVs (`hisparse bench --csv`, `bench step --csv`): commas outside
// double quotes separate fields, quotes are dropped, a trailing CR is ignored.
#pragma once

#include <string>
#include <vector>

namespace hisparse {

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace hisparse
