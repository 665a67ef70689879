// @brief Strict YAML reading: typed getters with ranges and units, unknown-key detection, errors with file/key/value.
#include "core/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/not_found_error.h"

namespace hisparse {

namespace {

struct Prefix {
  const char* text;
  double factor;
};

// Binary prefixes first so "Gi" is not read as "G" followed by a unit starting with 'i'.
constexpr Prefix kPrefixes[] = {
    {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0},
    {"k", 1e3},     {"K", 1e3},        {"M", 1e6},           {"G", 1e9},                {"T", 1e12},
    {"P", 1e15},    {"", 1.0},
};

std::vector<std::string> unit_names(Unit unit) {
  switch (unit) {
    case Unit::kBytes: return {"B"};
    case Unit::kBytesPerSecond: return {"B/s"};
    case Unit::kBitsPerSecond: return {"b/s", "bit/s", "bps"};
    case Unit::kFlopsPerSecond: return {"FLOP/s", "FLOPS", "flop/s"};
    case Unit::kNanoseconds: return {};
    case Unit::kNone: return {};
  }
  return {};
}

bool parse_time_suffix(const std::string& suffix, double* factor) {
  static const std::pair<const char*, double> kTimes[] = {
      {"ns", 1.0}, {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [name, f] : kTimes) {
    if (suffix == name) {
      *factor = f;
      return true;
    }
  }
  return false;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

const char* unit_hint(Unit unit) {
  switch (unit) {
    case Unit::kBytes: return "bytes (a number, or with a unit like 150.7GB, 143771MiB)";
    case Unit::kBytesPerSecond: return "bytes/s (a number, or with a unit like 55.3GB/s)";
    case Unit::kBitsPerSecond: return "bits/s (a number, or with a unit like 400Gb/s)";
    case Unit::kFlopsPerSecond: return "FLOP/s (a number, or with a unit like 148TFLOP/s)";
    case Unit::kNanoseconds: return "nanoseconds (a number, or with a unit like 2us, 1.5ms)";
    case Unit::kNone: return "a number";
  }
  return "a number";
}

std::string format_number(double v) { return fmt::format("{:g}", v); }

/// A byte size's suffix as people type it: SI prefixes are powers of 1000 and binary ones powers of 1024 whatever the
/// letter case, the "B" optional ("141GB", "141 gb", "141G" = 141e9; "141GiB", "141Gi" = 141 × 2^30; "2TiB", "1 TB").
/// A byte size has no bits and no millis, so a lower-case b or m can only mean bytes and mega.
bool parse_byte_suffix(const std::string& suffix, double number, double* out) {
  std::string s;
  for (char c : suffix) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "byte" || s == "bytes") s = "b";
  if (!s.empty() && s.back() == 'b') s.pop_back();
  static const std::pair<const char*, double> kByteScales[] = {
      {"", 1.0},       {"k", 1e3},           {"m", 1e6},       {"g", 1e9},       {"t", 1e12},
      {"p", 1e15},     {"ki", 1024.0},       {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0},
      {"pi", 1125899906842624.0}};
  for (const auto& [name, factor] : kByteScales) {
    if (s != name) continue;
    *out = number * factor;
    return true;
  }
  return false;
}

}  // namespace

bool parse_quantity(const std::string& raw, Unit unit, double* out) {
  const std::string text = trim(raw);
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno == ERANGE || !std::isfinite(number)) return false;
  // strtod accepts "nan"/"inf"/hex; only plain decimal literals are quantities.
  for (const char* p = text.c_str(); p != end; ++p) {
    if (!(std::isdigit(static_cast<unsigned char>(*p)) || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
          *p == '-'))
      return false;
  }
  const std::string suffix = trim(std::string(end));
  if (suffix.empty()) {
    *out = number;
    return true;
  }
  if (unit == Unit::kNone) return false;
  if (unit == Unit::kBytes) return parse_byte_suffix(suffix, number, out);
  if (unit == Unit::kNanoseconds) {
    double factor = 0;
    if (!parse_time_suffix(suffix, &factor)) return false;
    *out = number * factor;
    return true;
  }
  for (const auto& prefix : kPrefixes) {
    const std::string p = prefix.text;
    if (suffix.compare(0, p.size(), p) != 0) continue;
    const std::string rest = suffix.substr(p.size());
    for (const auto& name : unit_names(unit)) {
      if (rest == name) {
        *out = number * prefix.factor;
        return true;
      }
    }
  }
  return false;
}

double parse_byte_size(const std::string& text, const std::string& what) {
  double v = 0;
  if (!parse_quantity(text, Unit::kBytes, &v) || v < 0)
    throw_error("{} '{}' is not a byte size (expected a number of bytes or one with a unit: {})", what, text,
                kByteUnitsHelp);
  return v;
}

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw_not_found("{}: no such file", path);
    throw_error("{}: cannot open file", path);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return load_yaml_string(buffer.str(), path);
}

YAML::Node load_yaml_string(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw_error("{}: line {}, column {}: not valid YAML/JSON: {}", where, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

std::string describe_node(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing (null)";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  // A file that is not YAML reads as one scalar, the whole file: an error quotes its start only (a 5 MB text used to
  // be printed whole), on one line.
  constexpr size_t kQuoted = 60;
  const std::string& text = node.Scalar();
  const size_t line_end = text.find_first_of("\r\n");
  if (text.size() <= kQuoted && line_end == std::string::npos) return fmt::format("'{}'", text);
  return fmt::format("'{}…' (a text of {} characters, not a YAML value)", text.substr(0, std::min(kQuoted, line_end)),
                     text.size());
}

StrictMap::StrictMap(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsDefined() || node_.IsNull()) {
    node_ = YAML::Node(YAML::NodeType::Map);
  } else if (!node_.IsMap()) {
    throw_error("{}: {}: got {}, expected a mapping of keys to values", file_, path_.empty() ? "document" : path_,
                describe_node(node_));
  }
  // yaml-cpp keeps both entries of a repeated key and answers lookups with the first, so the second value would be
  // dropped without a word.
  std::map<std::string, int> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    const int line = kv.first.Mark().line + 1;
    const auto [it, fresh] = seen.emplace(key, line);
    if (!fresh)
      throw_error("{}: {} (line {}): the key appears twice (first on line {}); remove one", file_, key_path(key), line,
                  it->second);
  }
}

std::string StrictMap::key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

std::string StrictMap::location() const { return path_.empty() ? file_ : fmt::format("{}: {}", file_, path_); }

std::string StrictMap::where(const std::string& key) const { return fmt::format("{}: {}", file_, key_path(key)); }

void StrictMap::fail(const std::string& key, const std::string& got, const std::string& expected) const {
  std::string line;
  const YAML::Node n = node_[key];
  if (n.IsDefined() && n.Mark().line >= 0) line = fmt::format(" (line {})", n.Mark().line + 1);
  throw_error("{}: {}{}: got {}, expected {}", file_, key_path(key), line, got, expected);
}

bool StrictMap::take(const std::string& key) {
  used_.insert(key);
  return has(key);
}

bool StrictMap::has(const std::string& key) const {
  const YAML::Node n = node_[key];
  return n.IsDefined();
}

bool StrictMap::is_map(const std::string& key) const {
  const YAML::Node n = node_[key];
  return n.IsDefined() && n.IsMap();
}

void StrictMap::require(const std::string& key) const {
  if (!has(key)) throw_error("{}: missing required key '{}'", file_, key_path(key));
}

YAML::Node StrictMap::scalar(const std::string& key) {
  used_.insert(key);
  YAML::Node n = node_[key];
  if (!n.IsScalar()) fail(key, describe_node(n), "a single value");
  return n;
}

void StrictMap::get(const std::string& key, std::string* out) {
  if (!take(key)) return;
  *out = scalar(key).Scalar();
}

void StrictMap::get(const std::string& key, bool* out) {
  if (!take(key)) return;
  const std::string s = scalar(key).Scalar();
  if (s == "true") {
    *out = true;
  } else if (s == "false") {
    *out = false;
  } else {
    fail(key, describe_node(node_[key]), "true or false");
  }
}

void StrictMap::get(const std::string& key, int64_t* out, int64_t lo, int64_t hi) {
  if (!take(key)) return;
  const std::string s = trim(scalar(key).Scalar());
  const std::string expected = fmt::format("an integer in [{}, {}]", lo, hi);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) fail(key, describe_node(node_[key]), expected);
  if (v < lo || v > hi) fail(key, describe_node(node_[key]), expected);
  *out = v;
}

void StrictMap::get(const std::string& key, int* out, int64_t lo, int64_t hi) {
  int64_t v = *out;
  get(key, &v, lo, hi);
  *out = static_cast<int>(v);
}

void StrictMap::get(const std::string& key, double* out, double lo, double hi, Unit unit) {
  if (!take(key)) return;
  const std::string s = scalar(key).Scalar();
  double v = 0;
  if (!parse_quantity(s, unit, &v)) fail(key, describe_node(node_[key]), unit_hint(unit));
  if (v < lo || v > hi)
    fail(key, describe_node(node_[key]),
         fmt::format("{} in [{}, {}]", unit_hint(unit), format_number(lo), format_number(hi)));
  *out = v;
}

void StrictMap::get_integral(const std::string& key, int64_t* out, int64_t lo, int64_t hi, Unit unit) {
  if (!take(key)) return;
  double v = static_cast<double>(*out);
  get(key, &v, static_cast<double>(lo), static_cast<double>(hi), unit);
  if (v != std::floor(v)) fail(key, describe_node(node_[key]), fmt::format("a whole number of {}", unit_hint(unit)));
  *out = static_cast<int64_t>(v);
}

void StrictMap::get_choice(const std::string& key, std::string* out, const std::vector<std::string>& choices) {
  if (!take(key)) return;
  const std::string s = scalar(key).Scalar();
  for (const auto& c : choices) {
    if (s == c) {
      *out = s;
      return;
    }
  }
  fail(key, describe_node(node_[key]), fmt::format("one of: {}", fmt::join(choices, ", ")));
}

StrictMap StrictMap::child(const std::string& key) {
  used_.insert(key);
  return StrictMap(node_[key], file_, key_path(key));
}

YAML::Node StrictMap::sequence(const std::string& key) {
  used_.insert(key);
  const YAML::Node n = node_[key];
  if (n && !n.IsSequence()) fail(key, describe_node(n), "a list");
  return n ? n : YAML::Node(YAML::NodeType::Sequence);
}

void StrictMap::finish() const {
  std::vector<std::string> known(used_.begin(), used_.end());
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (used_.count(key)) continue;
    std::string line;
    if (kv.first.Mark().line >= 0) line = fmt::format(" (line {})", kv.first.Mark().line + 1);
    throw_error("{}: unknown key '{}'{}; expected one of: {}", file_, key_path(key), line,
                known.empty() ? std::string("(no keys here)") : fmt::format("{}", fmt::join(known, ", ")));
  }
}

}  // namespace hisparse
