// @brief Strict YAML reading: every key must be known, every value typed and in range, every error names file/key/value.
//
// Units accepted for quantities (plain numbers are always accepted and mean the base unit):
//   bytes        1152, 141e9, "141GB", "143771MiB", "1TB", "2TiB", "141G", "1 tib"
//                (B optional, any letter case; k/M/G/T/P = 10^3.., Ki/Mi/Gi/Ti/Pi = 2^10..)
//   bytes/s      55.3e9, "55.3GB/s", "4.8TB/s"                               (B/s)
//   bits/s       400e9, "400Gb/s", "400Gbit/s"                               (b/s, bit/s: lower-case b means bits)
//   FLOP/s       148e12, "148TFLOP/s", "148TFLOPS"
//   nanoseconds  2000, "2us", "2µs", "1.5ms", "0.5s", "800ns"
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace hisparse {

enum class Unit { kNone, kBytes, kBytesPerSecond, kBitsPerSecond, kFlopsPerSecond, kNanoseconds };

/// Parses "55.3GB/s"-style text into the base unit of `unit`; returns false when the text is not such a quantity.
bool parse_quantity(const std::string& text, Unit unit, double* out);

/// What a byte size may be, for the help of every flag that takes one.
inline constexpr const char* kByteUnitsHelp =
    "141e9, 141GB or 141G (GB = 10^9 B), 143771MiB or 140.4GiB (GiB = 2^30 B), 1TB (10^12 B), 1TiB (2^40 B)";

/// A byte size given as text (a flag, a Python argument): parse_quantity in bytes, >= 0; else throws
/// hisparse::Error "<what> '<text>' is not a byte size (expected …)". The one parser of byte sizes besides YAML's.
double parse_byte_size(const std::string& text, const std::string& what);

/// Loads a YAML file; a missing file or a syntax error becomes hisparse::Error naming the file (and line).
YAML::Node load_yaml_file(const std::string& path);

/// Parses YAML/JSON text (JSON is YAML flow syntax); errors name `where`.
YAML::Node load_yaml_string(const std::string& text, const std::string& where);

/// A view of one YAML mapping that hands out typed values and, at finish(), rejects keys nobody asked for.
/// Keys absent from the document leave the caller's default untouched (optional fields).
class StrictMap {
 public:
  /// `file` names the document in errors; `path` is the key path of this map ("" at the root, "pcie" below).
  StrictMap(YAML::Node node, std::string file, std::string path);

  bool has(const std::string& key) const;
  /// True when `key` is present and holds a mapping (a value given with its provenance, say).
  bool is_map(const std::string& key) const;
  /// Throws unless `key` is present (for fields without a sensible default).
  void require(const std::string& key) const;

  void get(const std::string& key, std::string* out);
  void get(const std::string& key, bool* out);
  /// Integers: the scalar must be an integer literal within [lo, hi].
  void get(const std::string& key, int* out, int64_t lo, int64_t hi);
  void get(const std::string& key, int64_t* out, int64_t lo, int64_t hi);
  /// Real numbers, optionally with a unit suffix, within [lo, hi] (in the base unit).
  void get(const std::string& key, double* out, double lo, double hi, Unit unit = Unit::kNone);
  /// An integer number of bytes/ns with an optional unit suffix ("64KiB"); must come out integral.
  void get_integral(const std::string& key, int64_t* out, int64_t lo, int64_t hi, Unit unit);
  /// One of `choices`.
  void get_choice(const std::string& key, std::string* out, const std::vector<std::string>& choices);

  /// A nested mapping; the child's unknown keys are checked by its own finish().
  StrictMap child(const std::string& key);
  /// The list under `key` (empty when absent), marked as read; an error unless it is a sequence.
  YAML::Node sequence(const std::string& key);

  /// Throws naming the first key present in the document that was never read.
  void finish() const;

  /// "file: key.path" prefix for errors raised by callers (cross-field checks).
  std::string where(const std::string& key) const;
  const std::string& file() const { return file_; }
  /// "file" at the root, "file: path" below it.
  std::string location() const;

 private:
  YAML::Node scalar(const std::string& key);
  bool take(const std::string& key);  // marks `key` as known; true when present
  std::string key_path(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& got, const std::string& expected) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> used_;
};

/// Human text of a scalar for error messages ("'fast'", "2048", "a mapping").
std::string describe_node(const YAML::Node& node);

}  // namespace hisparse
