// @brief Strict reader of the Prometheus text exposition format (version 0.0.4, as `/metrics` serves it and as
// OpenMetrics-style `# EOF` ends it), for `hisparse calibrate --from-metrics` (docs/capture.md).
//
// Grammar accepted, one item per line ('\n', an optional '\r' before it):
//   blank line | "# HELP" name text | "# TYPE" name counter|gauge|histogram|summary|untyped|unknown
//   | "# EOF" (ends the current scrape) | "#" other comment
//   | name [ "{" label="value" {"," label="value"} [","] "}" ] value [ timestamp_ms ]
// name [a-zA-Z_:][a-zA-Z0-9_:]*, label [a-zA-Z_][a-zA-Z0-9_]*, values in double quotes with the escapes \\ \" \n
// only; value a float (also NaN, +Inf, -Inf); timestamp an integer (milliseconds since the epoch).
// Several scrapes may be concatenated in one file (`curl .../metrics >> FILE` on a timer): a scrape ends at
// "# EOF" or where a series (name and label set) already seen in it appears again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hisparse::sim::counters {

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by label name, names unique

struct PromSample {
  std::string name;
  Labels labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  int64_t line = 0;
};

struct PromScrape {
  std::string file;
  int64_t first_line = 0, last_line = 0;
  std::vector<PromSample> samples;
  std::optional<int64_t> timestamp_ms;  // the largest sample timestamp, when any sample has one
  /// The value of series (name, labels), nullptr when absent.
  const PromSample* find(const std::string& name, const Labels& labels) const;
};

struct PromDocument {
  std::string file;
  std::map<std::string, std::string> types;  // metric family → declared type
  std::vector<PromScrape> scrapes;
};

/// Limits a hostile file cannot exceed without an error naming it (the parser allocates per sample).
inline constexpr size_t kMaxPromLineBytes = size_t{1} << 20;
inline constexpr size_t kMaxPromLabels = 128;
inline constexpr size_t kMaxPromSamples = size_t{1} << 24;

/// Parses `text` (the contents of `file`); throws hisparse::Error "file:line: what was expected, what was found".
PromDocument parse_prometheus_text(const std::string& text, const std::string& file);

/// Reads and parses `path`.
PromDocument read_prometheus_file(const std::string& path);

}  // namespace hisparse::sim::counters
