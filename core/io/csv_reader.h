// @brief CsvReader: the strict row loop the project's CSV readers share
// (FlashMLA timing tables, bench CSVs, op tables): the header first, then rows
// of exactly as many fields, blank lines skipped, and every error naming the
// file, the line and, for a bad value, the column, the value and what was
// expected.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

namespace hisparse {

class CsvReader {
 public:
  /// Opens `path` and reads its header. `what` names the file's kind in the
  /// errors ("the bench CSV"), `header_hint` what the first line should be ("a
  /// `hisparse bench --csv` header"). Throws when the file cannot be opened or
  /// is empty.
  CsvReader(const std::string &path, const std::string &what, const std::string &header_hint);

  const std::string &path() const { return path_; }
  const std::vector<std::string> &header() const { return header_; }
  /// The header line as written (without a trailing CR), for readers that
  /// require one exact header.
  const std::string &header_line() const { return header_line_; }

  /// The index of column `name`; throws "<path>:1: the header lacks column
  /// '<name>' (<hint>)" when absent.
  size_t column(const std::string &name, const std::string &hint = "") const;
  /// True when the header has column `name`.
  bool has_column(const std::string &name) const;

  /// The next non-blank row into `fields`; false at the end. Throws naming the
  /// line when the row's field count differs from the header's.
  bool next(std::vector<std::string> &fields);
  /// The line number of the row `next` returned (the header is line 1).
  int line() const { return line_; }
  /// "<path>:<line>", the prefix of an error about the current row.
  std::string where() const;

  /// Throws "<path>:<line>: column <name> is '<value>' (expected <expected>)"
  /// for the current row.
  [[noreturn]] void bad(const std::vector<std::string> &fields, size_t column, const std::string &expected) const;

 private:
  std::string path_;
  std::ifstream in_;
  std::string header_line_;
  std::vector<std::string> header_;
  int line_ = 1;
};

}  // namespace hisparse
