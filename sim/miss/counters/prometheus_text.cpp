// @brief Prometheus text format reader: a hand-written scanner, so every malformed byte gets a file:line message.
#include "sim/miss/counters/prometheus_text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "core/error.h"
#include "core/io/text_lines.h"

namespace hisparse::sim::counters {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool label_start(char c) { return name_start(c) && c != ':'; }
bool label_char(char c) { return name_char(c) && c != ':'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

/// What a reader prints of an offending token: at most 40 bytes, control characters escaped.
std::string shown(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 40)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return s.size() > 40 ? out + "..." : out;
}

class LineParser {
 public:
  LineParser(const std::string& line, const std::string& where) : s_(line), where_(where) {}

  [[noreturn]] void fail(const std::string& expected) const {
    const std::string rest = pos_ < s_.size() ? "'" + shown(s_.substr(pos_)) + "'" : "the end of the line";
    throw_error("{}: column {}: expected {}, found {}", where_, pos_ + 1, expected, rest);
  }
  void skip_blanks() {
    while (pos_ < s_.size() && blank(s_[pos_])) ++pos_;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  std::string metric_name() {
    if (!name_start(peek())) fail("a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
    const size_t b = pos_;
    while (name_char(peek())) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  std::string label_name() {
    if (!label_start(peek())) fail("a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
    const size_t b = pos_;
    while (label_char(peek())) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  std::string label_value() {
    if (peek() != '"') fail("'\"' opening a label value");
    ++pos_;
    std::string v;
    while (true) {
      if (at_end()) fail("'\"' closing the label value");
      const char c = s_[pos_++];
      if (c == '"') return v;
      if (c != '\\') {
        v += c;
        continue;
      }
      const char e = peek();
      if (e == '\\' || e == '"') {
        v += e;
      } else if (e == 'n') {
        v += '\n';
      } else {
        fail("an escape \\\\, \\\" or \\n in a label value");
      }
      ++pos_;
    }
  }
  Labels labels() {
    Labels out;
    ++pos_;  // '{'
    skip_blanks();
    while (peek() != '}') {
      std::string name = label_name();
      skip_blanks();
      if (peek() != '=') fail("'=' after label " + name);
      ++pos_;
      skip_blanks();
      out.emplace_back(std::move(name), label_value());
      if (out.size() > kMaxPromLabels) throw_error("{}: more than {} labels on one sample", where_, kMaxPromLabels);
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        skip_blanks();
      } else if (peek() != '}') {
        fail("',' or '}' after a label value");
      }
    }
    ++pos_;
    std::sort(out.begin(), out.end());
    for (size_t i = 1; i < out.size(); ++i) {
      if (out[i].first == out[i - 1].first) throw_error("{}: label {} given twice", where_, out[i].first);
    }
    return out;
  }
  std::string token() {
    const size_t b = pos_;
    while (!at_end() && !blank(peek())) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  double value() {
    const std::string t = token();
    if (t.empty()) fail("a sample value");
    if (t == "NaN") return std::nan("");
    if (t == "+Inf" || t == "Inf") return HUGE_VAL;
    if (t == "-Inf") return -HUGE_VAL;
    // strtod also takes hex floats, "inf" and "nan(...)"; the format does not.
    if (t.find_first_not_of("0123456789+-.eE") != std::string::npos) {
      pos_ -= t.size();
      fail("a float value (digits, sign, '.', exponent; or NaN, +Inf, -Inf)");
    }
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) {
      pos_ -= t.size();
      fail("a float value");
    }
    return v;
  }
  int64_t timestamp() {
    const std::string t = token();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || end != t.c_str() + t.size() || errno == ERANGE ||
        t.find_first_not_of("0123456789-") != std::string::npos) {
      pos_ -= t.size();
      fail("an integer timestamp in milliseconds");
    }
    return v;
  }

 private:
  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

const std::set<std::string>& known_types() {
  static const std::set<std::string> t = {"counter", "gauge", "histogram", "summary", "untyped", "unknown"};
  return t;
}

/// The family a sample belongs to, for TYPE bookkeeping: counters expose name_total / name_created, histograms
/// and summaries name_bucket / _sum / _count.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_total", "_created", "_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (types.count(base)) return base;
    }
  }
  return name;
}

}  // namespace

const PromSample* PromScrape::find(const std::string& name, const Labels& labels) const {
  for (const PromSample& s : samples) {
    if (s.name == name && s.labels == labels) return &s;
  }
  return nullptr;
}

PromDocument parse_prometheus_text(const std::string& text, const std::string& file) {
  PromDocument doc;
  doc.file = file;
  std::set<std::string> families_with_samples;  // in the whole file: a TYPE after them is out of order
  std::set<std::pair<std::string, Labels>> seen;  // series of the current scrape
  size_t total = 0;
  auto begin_scrape = [&](int64_t line) {
    doc.scrapes.emplace_back();
    doc.scrapes.back().file = file;
    doc.scrapes.back().first_line = line;
    seen.clear();
  };
  bool open = false;
  TextLines lines(text);
  std::string line;
  while (lines.next(line)) {
    const int64_t line_no = lines.number();
    const std::string where = fmt::format("{}:{}", file, line_no);
    if (line.size() > kMaxPromLineBytes) throw_error("{}: line longer than {} bytes", where, kMaxPromLineBytes);
    if (line.find('\0') != std::string::npos) throw_error("{}: NUL byte (not a text exposition)", where);
    LineParser p(line, where);
    p.skip_blanks();
    if (p.at_end()) continue;
    if (p.peek() == '#') {
      const std::string rest = line.substr(line.find('#') + 1);
      if (rest == " EOF" || rest == "EOF") {
        open = false;
        continue;
      }
      if (rest.rfind(" TYPE ", 0) == 0) {
        LineParser t(rest, where);
        t.skip_blanks();
        t.token();  // "TYPE"
        t.skip_blanks();
        const std::string name = t.metric_name();
        t.skip_blanks();
        const std::string type = t.token();
        t.skip_blanks();
        if (!known_types().count(type) || !t.at_end())
          throw_error("{}: TYPE {}: expected one of counter, gauge, histogram, summary, untyped, unknown, got '{}'",
                      where, name, shown(type));
        const auto it = doc.types.find(name);
        if (it != doc.types.end() && it->second != type)
          throw_error("{}: TYPE {} {} contradicts the earlier TYPE {}", where, name, type, it->second);
        if (it == doc.types.end() && families_with_samples.count(name))
          throw_error("{}: TYPE {} comes after samples of {} (it must precede them)", where, name, name);
        doc.types[name] = type;
      } else if (rest.rfind(" HELP ", 0) == 0) {
        LineParser h(rest, where);
        h.skip_blanks();
        h.token();
        h.skip_blanks();
        h.metric_name();  // the docstring itself is free text
      }
      continue;
    }
    PromSample s;
    s.line = line_no;
    s.name = p.metric_name();
    p.skip_blanks();
    if (p.peek() == '{') {
      s.labels = p.labels();
      p.skip_blanks();
    }
    if (p.at_end()) p.fail("a sample value after " + s.name);
    s.value = p.value();
    p.skip_blanks();
    if (!p.at_end()) {
      s.timestamp_ms = p.timestamp();
      p.skip_blanks();
      if (!p.at_end()) p.fail("the end of the line after the timestamp");
    }
    const std::string family = family_of(s.name, doc.types);
    const auto type = doc.types.find(family);
    if (type != doc.types.end() && type->second == "counter" && !(s.value >= 0))
      throw_error("{}: counter {} has value {} (counters are >= 0)", where, s.name, s.value);
    families_with_samples.insert(family);
    auto key = std::make_pair(s.name, s.labels);
    if (!open || seen.count(key)) {
      begin_scrape(line_no);
      open = true;
    }
    seen.insert(std::move(key));
    PromScrape& sc = doc.scrapes.back();
    sc.last_line = line_no;
    if (s.timestamp_ms) sc.timestamp_ms = std::max(sc.timestamp_ms.value_or(*s.timestamp_ms), *s.timestamp_ms);
    if (++total > kMaxPromSamples) throw_error("{}: more than {} samples", where, kMaxPromSamples);
    sc.samples.push_back(std::move(s));
  }
  return doc;
}

PromDocument read_prometheus_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("{}: cannot open for reading", path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  return parse_prometheus_text(text, path);
}

}  // namespace hisparse::sim::counters
