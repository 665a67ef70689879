// @brief JsonWriter: the one small JSON writer of the project. Objects and arrays (members on their own lines, or
// inline), strings through json_quote (core/io/output_file.h), integers in decimal, doubles in fmt's shortest
// round-trip text or at a fixed number of decimals: the same value always gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hisparse {

class JsonWriter {
 public:
  /// kLines: every element on its own line, `indent` spaces per nesting level; kInline: "{"a": 1, "b": 2}".
  enum class Layout { kLines, kInline };

  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  /// `column` >= 0 (kLines only): the elements start at that many spaces, the closing bracket `indent` fewer, instead
  /// of following the nesting depth (a kLines array inside an inline object of an older report).
  JsonWriter& begin_object(Layout layout = Layout::kLines, int column = -1);
  JsonWriter& end_object();
  JsonWriter& begin_array(Layout layout = Layout::kLines, int column = -1);
  JsonWriter& end_array();
  /// The next value is this member of the open object.
  JsonWriter& key(std::string_view name);

  JsonWriter& string(std::string_view s);
  JsonWriter& number(int64_t v);
  JsonWriter& number(int32_t v) { return number(static_cast<int64_t>(v)); }
  JsonWriter& number(uint64_t v);
  /// fmt's shortest text that reads back as `v` ("80", "0.1", "1e+30"); null when not finite (JSON has no inf).
  JsonWriter& number(double v);
  /// `v` with `decimals` digits after the point ("25.350"); null when not finite.
  JsonWriter& fixed(double v, int decimals);
  /// `v` with at most `digits` significant digits, fmt's "{:.Ng}" ("0.123457", "1.5e+09"); null when not finite.
  JsonWriter& general(double v, int digits);
  /// A whole `v` below 9e15 as an integer ("1000000000000"), any other as general(v, digits); null when not finite.
  /// The planner's number style: byte counts stay exact integers, ratios keep `digits` significant digits.
  JsonWriter& whole_or_general(double v, int digits);
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  /// Layout exceptions the older reports kept, so their bytes did not change: the next element of a kLines
  /// container follows on the current line after ", " (same_line), or the next element of a kInline container
  /// starts a new line indented to its nesting depth, or to `column` spaces when given (new_line).
  JsonWriter& same_line();
  JsonWriter& new_line(int column = -1);
  /// A value already written as JSON (a nested report's text), copied as it is.
  JsonWriter& raw(std::string_view json);

  /// key(name) then the value.
  template <typename T>
  JsonWriter& member(std::string_view name, const T& value) {
    key(name);
    return put(value);
  }

  /// The text so far; every object and array must be closed (throws hisparse::Error otherwise).
  const std::string& str() const;

 private:
  struct Level {
    bool object;
    Layout layout;
    bool empty = true;
    int column = -1;  // elements' indentation when set, else indent_ × depth
  };
  JsonWriter& put(std::string_view v) { return string(v); }
  JsonWriter& put(const std::string& v) { return string(v); }
  JsonWriter& put(const char* v) { return string(v); }
  JsonWriter& put(bool v) { return boolean(v); }
  JsonWriter& put(int32_t v) { return number(v); }
  JsonWriter& put(int64_t v) { return number(v); }
  JsonWriter& put(uint64_t v) { return number(v); }
  JsonWriter& put(double v) { return number(v); }
  void before_value();
  void separate(Level& l);
  void open(bool object, Layout layout, int column, char bracket);
  void close(bool object, char bracket);

  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool key_pending_ = false;
  enum class Break { kLayout, kSameLine, kNewLine };
  Break next_break_ = Break::kLayout;  // set by same_line() / new_line(), used by the next separator
  int next_column_ = -1;
};

}  // namespace hisparse
