// @brief Parsing of comma-separated list flags (see list_args.h).
#include "apps/list_args.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/error.h"

namespace hisparse::apps {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int64_t> parse_count_list(const std::string& text, const std::string& command, const std::string& flag,
                                      int64_t lo, int64_t hi, const std::string& example) {
  // "32,,64" or "32,64," is a typo (a value left out), not a list of two: refused, not read as one.
  const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  const bool stray_comma = first != std::string::npos && (text[first] == ',' || text[last] == ',');
  size_t gap = text.find(',');
  while (gap != std::string::npos) {
    const size_t next = text.find_first_not_of(" \t", gap + 1);
    if (next != std::string::npos && text[next] == ',') break;
    gap = text.find(',', gap + 1);
  }
  if (stray_comma || gap != std::string::npos)
    throw_error("{}: {} '{}' has an empty item (expected integers separated by single commas, e.g. {})", command, flag,
                text, example);
  std::vector<int64_t> out;
  for (const std::string& item : split_list(text)) {
    std::string digits = item;
    int64_t scale = 1;
    const char last = digits.empty() ? '\0' : static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    if (last == 'K' || last == 'M') {
      scale = last == 'K' ? 1024 : 1024 * 1024;
      digits.pop_back();
    }
    bool ok = !digits.empty() && digits.size() <= 12 &&
              std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    int64_t v = 0;
    if (ok) {
      v = std::stoll(digits) * scale;
      ok = v >= lo && v <= hi;
    }
    if (!ok)
      throw_error("{}: {}: '{}' is not an integer in [{}, {}] (expected e.g. {})", command, flag, item, lo, hi, example);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  if (out.empty()) throw_error("{}: {} '{}' names no value (expected e.g. {})", command, flag, text, example);
  return out;
}

}  // namespace hisparse::apps
