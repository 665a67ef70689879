// @brief fold_line (see fold_line.h).
#include "sim/report/fold_line.h"

#include <cctype>

namespace hisparse::sim {

std::string fold_line(const std::string& line, bool verbose) {
  if (verbose) return line;
  // An absolute path (a token starting with '/', after a space, a parenthesis or the line's start, with at least one
  // folder) → its file name. Scanned by hand: GCC 12's std::regex trips -Werror=maybe-uninitialized under ASan.
  std::string o;
  o.reserve(line.size());
  auto stop = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ',' || c == ';'; };
  for (size_t i = 0; i < line.size();) {
    const bool starts = line[i] == '/' && (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1])) || line[i - 1] == '(');
    if (starts) {
      size_t j = i + 1, comps = 0, last_begin = 0, last_end = 0;
      while (true) {  // components: runs of non-'/' non-stop characters, one '/' between them
        size_t k = j;
        while (k < line.size() && line[k] != '/' && !stop(line[k])) ++k;
        if (k == j) break;
        ++comps, last_begin = j, last_end = k;
        if (k < line.size() && line[k] == '/') j = k + 1;
        else break;
      }
      if (comps >= 2) {
        o.append(line, last_begin, last_end - last_begin);
        i = last_end;
        continue;
      }
    }
    o += line[i++];
  }
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
