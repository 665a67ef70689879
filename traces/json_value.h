// @brief A small strict JSON parser (RFC 8259 subset enough for meta.json and JSON-lines traces).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hisparse::traces {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  bool is_integer = false;  // a number written without fraction/exponent that fits int64
  int64_t integer = 0;
  double number = 0.0;
  std::string text;                                        // kString
  std::vector<JsonValue> items;                            // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in file order

  const JsonValue* find(std::string_view key) const;  // nullptr if absent (or not an object)
};

/// Parses exactly one JSON value (surrounding whitespace allowed). Errors name `what` and the byte offset.
/// Nesting deeper than 64 is rejected so hostile input cannot exhaust the stack.
JsonValue parse_json(std::string_view text, const std::string& what);

}  // namespace hisparse::traces
