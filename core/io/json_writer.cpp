// @brief JsonWriter (see json_writer.h).
#include "core/io/json_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/output_file.h"

namespace hisparse {

void JsonWriter::before_value() {
  if (stack_.empty()) {
    if (!out_.empty()) throw_error("JsonWriter: a second top-level value (a JSON text holds one)");
    return;
  }
  Level& l = stack_.back();
  if (l.object) {
    if (!key_pending_) throw_error("JsonWriter: a value inside an object without its key");
    key_pending_ = false;
    return;  // key() wrote the separator and the name
  }
  separate(l);
}

void JsonWriter::separate(Level& l) {
  const bool lines = next_break_ == Break::kLayout ? l.layout == Layout::kLines : next_break_ == Break::kNewLine;
  const int column = next_column_ >= 0 ? next_column_ : l.column >= 0 ? l.column : indent_ * static_cast<int>(stack_.size());
  next_break_ = Break::kLayout;
  next_column_ = -1;
  if (!l.empty) out_ += lines ? "," : ", ";
  if (lines) out_ += "\n" + std::string(static_cast<size_t>(column), ' ');
  l.empty = false;
}

JsonWriter& JsonWriter::same_line() {
  next_break_ = Break::kSameLine;
  return *this;
}

JsonWriter& JsonWriter::new_line(int column) {
  next_break_ = Break::kNewLine;
  next_column_ = column;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().object) throw_error("JsonWriter: key '{}' outside an object", name);
  if (key_pending_) throw_error("JsonWriter: key '{}' after a key without its value", name);
  Level& l = stack_.back();
  separate(l);
  out_ += json_quote(std::string(name));
  out_ += ": ";
  key_pending_ = true;
  return *this;
}

void JsonWriter::open(bool object, Layout layout, int column, char bracket) {
  before_value();
  out_ += bracket;
  stack_.push_back({object, layout, true, column});
}

void JsonWriter::close(bool object, char bracket) {
  if (stack_.empty() || stack_.back().object != object)
    throw_error("JsonWriter: '{}' closes no open {}", bracket, object ? "object" : "array");
  if (key_pending_) throw_error("JsonWriter: the object closes after a key without its value");
  const Level l = stack_.back();
  stack_.pop_back();
  if (l.layout == Layout::kLines && !l.empty) {
    const int column = l.column >= 0 ? std::max(0, l.column - indent_) : indent_ * static_cast<int>(stack_.size());
    out_ += "\n" + std::string(static_cast<size_t>(column), ' ');
  }
  out_ += bracket;
}

JsonWriter& JsonWriter::begin_object(Layout layout, int column) { open(true, layout, column, '{'); return *this; }
JsonWriter& JsonWriter::end_object() { close(true, '}'); return *this; }
JsonWriter& JsonWriter::begin_array(Layout layout, int column) { open(false, layout, column, '['); return *this; }
JsonWriter& JsonWriter::end_array() { close(false, ']'); return *this; }

JsonWriter& JsonWriter::string(std::string_view s) {
  before_value();
  out_ += json_quote(std::string(s));
  return *this;
}

JsonWriter& JsonWriter::number(int64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}

JsonWriter& JsonWriter::number(uint64_t v) {
  before_value();
  out_ += fmt::format("{}", v);
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  before_value();
  out_ += std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
  return *this;
}

JsonWriter& JsonWriter::fixed(double v, int decimals) {
  before_value();
  out_ += std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : std::string("null");
  return *this;
}

JsonWriter& JsonWriter::general(double v, int digits) {
  before_value();
  out_ += std::isfinite(v) ? fmt::format("{:.{}g}", v, digits) : std::string("null");
  return *this;
}

JsonWriter& JsonWriter::whole_or_general(double v, int digits) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return number(static_cast<int64_t>(v));
  return general(v, digits);
}

JsonWriter& JsonWriter::boolean(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

const std::string& JsonWriter::str() const {
  if (!stack_.empty()) throw_error("JsonWriter: {} object(s) or array(s) still open", stack_.size());
  return out_;
}

}  // namespace hisparse
