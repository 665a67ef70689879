// @brief SGLang log lines → per-interval swap-in counters; strict on the lines it uses, blind to the rest.
#include "sim/miss/counters/sglang_log.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>

#include "core/error.h"
#include "core/io/text_lines.h"

namespace hisparse::sim::counters {
namespace {

std::optional<double> line_time(const std::string& line) {
  // "[YYYY-MM-DD HH:MM:SS" at the start; anything else: no time.
  if (line.size() < 20 || line[0] != '[') return std::nullopt;
  int Y, M, D, h, m, s;
  char tail = 0;
  if (std::sscanf(line.c_str(), "[%4d-%2d-%2d %2d:%2d:%2d%c", &Y, &M, &D, &h, &m, &s, &tail) != 7) return std::nullopt;
  if (tail != ']' && tail != ' ' && tail != ',' && tail != '.') return std::nullopt;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || s > 60 || Y < 1970) return std::nullopt;
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = s;
  return static_cast<double>(timegm(&tm));
}

double number(const std::string& text, const std::string& where, const std::string& key, bool integer) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  const bool plain = !text.empty() && text.find_first_not_of(integer ? "0123456789" : "0123456789.eE+-") ==
                                          std::string::npos;
  if (!plain || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) || v < 0)
    throw_error("{}: {}={}: expected a non-negative {}", where, key, text.empty() ? "(nothing)" : text,
                integer ? "integer" : "number");
  return v;
}

/// "key=value" fields after the marker, separated by ',' and/or blanks.
std::map<std::string, std::string> fields(const std::string& rest, const std::string& where) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',' || rest[i] == '\t')) ++i;
    if (i >= rest.size()) break;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != ',' && rest[j] != '\t') ++j;
    const std::string item = rest.substr(i, j - i);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw_error("{}: '{}': expected key=value (hits, misses, h2d_bytes, seq_len, device_buffer_size, top_k)", where,
                  item.substr(0, 40));
    const std::string key = item.substr(0, eq);
    if (!out.emplace(key, item.substr(eq + 1)).second) throw_error("{}: {} given twice", where, key);
    i = j;
  }
  return out;
}

/// The integer after "label:" in SGLang's decode line ("#running-req: 5,").
std::optional<double> decode_field(const std::string& line, const std::string& label, const std::string& where) {
  const size_t at = line.find(label);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + label.size();
  while (i < line.size() && line[i] == ' ') ++i;
  size_t j = i;
  while (j < line.size() && line[j] >= '0' && line[j] <= '9') ++j;
  if (j == i) throw_error("{}: '{}' without a number after it", where, label);
  return number(line.substr(i, j - i), where, label, true);
}

}  // namespace

bool looks_like_sglang_log(const std::string& text) {
  return text.find(kHiSparseLogMarker) != std::string::npos || text.find(kDecodeLogMarker) != std::string::npos;
}

std::vector<LogInterval> parse_sglang_log(const std::string& text, const std::string& file) {
  static const std::map<std::string, bool> known = {{"hits", true},         {"misses", true},
                                                    {"h2d_bytes", true},    {"seq_len", false},
                                                    {"device_buffer_size", true}, {"top_k", true}};
  std::vector<LogInterval> out;
  double n_sum = 0;
  int64_t n_lines = 0;
  TextLines lines(text);
  std::string line;
  while (lines.next(line)) {
    const std::string where = fmt::format("{}:{}", file, lines.number());
    if (line.find(kDecodeLogMarker) != std::string::npos) {
      const auto running = decode_field(line, "#running-req:", where);
      const auto tokens = decode_field(line, "#token:", where);
      if (!running || !tokens) throw_error("{}: decode line without #running-req and #token", where);
      if (*running > 0) {
        n_sum += *tokens / *running;
        ++n_lines;
      }
      continue;
    }
    const size_t at = line.find(kHiSparseLogMarker);
    if (at == std::string::npos) continue;
    const auto f = fields(line.substr(at + std::string(kHiSparseLogMarker).size()), where);
    for (const auto& [k, v] : f) {
      if (!known.count(k))
        throw_error("{}: unknown field '{}' (expected hits, misses, h2d_bytes, seq_len, device_buffer_size, top_k)",
                    where, k.substr(0, 40));
    }
    if (!f.count("hits") || !f.count("misses")) throw_error("{}: a HiSparse swap-in line needs hits= and misses=", where);
    LogInterval iv;
    iv.file = file;
    iv.line = lines.number();
    iv.time_s = line_time(line);
    iv.hits = number(f.at("hits"), where, "hits", true);
    iv.misses = number(f.at("misses"), where, "misses", true);
    if (f.count("h2d_bytes")) iv.h2d_bytes = number(f.at("h2d_bytes"), where, "h2d_bytes", true);
    if (f.count("seq_len")) {
      iv.seq_len = number(f.at("seq_len"), where, "seq_len", false);
    } else if (n_lines > 0) {
      iv.seq_len = n_sum / static_cast<double>(n_lines);
      iv.decode_lines = n_lines;
    }
    for (const char* k : {"device_buffer_size", "top_k"}) {
      if (!f.count(k)) continue;
      const double v = number(f.at(k), where, k, true);
      if (v < 1 || v > (1 << 24)) throw_error("{}: {}={} out of range 1..{}", where, k, v, 1 << 24);
      (std::string(k) == "top_k" ? iv.K : iv.H) = static_cast<int32_t>(v);
    }
    n_sum = 0;
    n_lines = 0;
    out.push_back(std::move(iv));
  }
  return out;
}

}  // namespace hisparse::sim::counters
