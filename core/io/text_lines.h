// @brief TextLines: a cursor over the lines of a whole text file read into memory, numbered from 1, for the readers of
// production counters (Prometheus text, SGLang logs) whose errors name file:line.
#pragma once

#include <cstdint>
#include <string>

namespace hisparse {

class TextLines {
 public:
  explicit TextLines(const std::string& text) : text_(text) {}

  /// The next line into `line`, without its '\n' or a Windows '\r' before it; false at the end. A last line without
  /// '\n' still counts; an empty text has no line.
  bool next(std::string& line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    line.assign(text_, pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pos_ = end + 1;
    ++number_;
    return true;
  }

  /// 1-based number of the line last returned by next().
  int64_t number() const { return number_; }

 private:
  const std::string& text_;
  size_t pos_ = 0;
  int64_t number_ = 0;
};

}  // namespace hisparse
