// @brief CsvReader (see csv_reader.h).
#include "core/io/csv_reader.h"

#include <algorithm>

#include "core/error.h"
#include "core/io/csv_line.h"

namespace hisparse {

CsvReader::CsvReader(const std::string &path, const std::string &what, const std::string &header_hint)
    : path_(path), in_(path) {
  if (!in_) throw_error("{}: cannot open {}", path, what);
  if (!std::getline(in_, header_line_)) throw_error("{}: empty file, expected {}", path, header_hint);
  if (!header_line_.empty() && header_line_.back() == '\r') header_line_.pop_back();
  header_ = split_csv_line(header_line_);
}

bool CsvReader::has_column(const std::string &name) const {
  return std::find(header_.begin(), header_.end(), name) != header_.end();
}

size_t CsvReader::column(const std::string &name, const std::string &hint) const {
  const auto it = std::find(header_.begin(), header_.end(), name);
  if (it == header_.end())
    throw_error("{}:1: the header lacks column '{}'{}", path_, name, hint.empty() ? "" : " (" + hint + ")");
  return static_cast<size_t>(it - header_.begin());
}

bool CsvReader::next(std::vector<std::string> &fields) {
  std::string text;
  while (std::getline(in_, text)) {
    ++line_;
    if (text.empty() || text == "\r") continue;
    fields = split_csv_line(text);
    if (fields.size() != header_.size())
      throw_error("{}:{}: {} fields, the header has {}", path_, line_, fields.size(), header_.size());
    return true;
  }
  return false;
}

std::string CsvReader::where() const { return path_ + ":" + std::to_string(line_); }

void CsvReader::bad(const std::vector<std::string> &fields, size_t column, const std::string &expected) const {
  throw_error("{}: column {} is '{}' (expected {})", where(), header_.at(column), fields.at(column), expected);
}

}  // namespace hisparse
