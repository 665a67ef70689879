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

  JsonWriter& begin_object(Layout layout = Layout::kLines);
  JsonWriter& end_object();
  JsonWriter& begin_array(Layout layout = Layout::kLines);
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
  JsonWriter& boolean(bool v);
  JsonWriter& null();
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
  void open(bool object, Layout layout, char bracket);
  void close(bool object, char bracket);

  int indent_;
  std::string out_;
  std::vector<Level> stack_;
  bool key_pending_ = false;
};

}  // namespace hisparse
