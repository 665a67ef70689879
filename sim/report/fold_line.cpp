// @brief fold_line (see fold_line.h).
#include "sim/report/fold_line.h"

#include <regex>

namespace hisparse::sim {

std::string fold_line(const std::string& line, bool verbose) {
  if (verbose) return line;
  // An absolute path (a token starting with '/', after a space, a parenthesis or the line's start) → its file name.
  static const std::regex path(R"((^|[\s(])/(?:[^\s(),;/]+/)+([^\s(),;/]+))");
  std::string o = std::regex_replace(line, path, "$1$2");
  if (o.size() <= kFoldWidth) return o;
  // Cut at the last space within the width (a space is one byte, so no UTF-8 sequence is split).
  size_t cut = o.rfind(' ', kFoldWidth);
  if (cut == std::string::npos || cut == 0) {
    cut = kFoldWidth;
    while (cut > 0 && (static_cast<unsigned char>(o[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  }
  while (cut > 0 && (o[cut - 1] == ',' || o[cut - 1] == ';' || o[cut - 1] == ':')) --cut;
  return o.substr(0, cut) + " … (--verbose)";
}

}  // namespace hisparse::sim
