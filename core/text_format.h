// @brief Number formatting shared by every report: digit grouping as people read figures in server logs.
#pragma once

#include <cstdint>
#include <string>

namespace hisparse {

/// 1307520 → "1,307,520".
inline std::string group_digits(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace hisparse
