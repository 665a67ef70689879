// @brief CsvReader (core/io/csv_reader.h), the strict row loop of the
// attention-table, bench, bench-step and op-table readers: rows come with their
// line numbers (blank lines skipped, CRLF accepted), a row with another field
// count, a missing column and a bad value are errors naming the file, the line,
// the column and the value.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io/csv_reader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

std::string write_csv(const std::string &name, const std::string &text) {
  const fs::path dir = fs::temp_directory_path() / ("hisparse_csv_reader_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

}  // namespace

TEST_CASE(
    "CsvReader yields each non-blank row with its line number; CRLF and "
    "quoted commas are read as the bench "
    "CSVs write them") {
  const std::string path = write_csv("good.csv", "a,b,c\r\n1,\"x,y\",3\r\n\r\n\n4,5,6\n");
  CsvReader csv(path, "the test CSV", "a header a,b,c");
  // Expected: header a,b,c (the CR dropped); rows on lines 2 and 5, the quoted
  // field kept whole.
  CHECK(csv.header_line() == "a,b,c");
  CHECK(csv.header() == std::vector<std::string>{"a", "b", "c"});
  CHECK(csv.column("c") == 2);
  CHECK(csv.has_column("b"));
  CHECK_FALSE(csv.has_column("d"));
  std::vector<std::string> row;
  REQUIRE(csv.next(row));
  CHECK(csv.line() == 2);
  CHECK(row == std::vector<std::string>{"1", "x,y", "3"});
  REQUIRE(csv.next(row));
  CHECK(csv.line() == 5);
  CHECK(csv.where() == path + ":5");
  CHECK(row == std::vector<std::string>{"4", "5", "6"});
  CHECK_FALSE(csv.next(row));
}

TEST_CASE(
    "CsvReader's errors name the file, the line, the column, the value "
    "and what was expected") {
  // Expected: a missing file and an empty one are refused with the kind of file
  // and the header wanted.
  CHECK_THROWS_WITH_AS(CsvReader("/nonexistent/x.csv", "the bench CSV", "a header"),
                       "/nonexistent/x.csv: cannot open the bench CSV", Error);
  const std::string empty = write_csv("empty.csv", "");
  CHECK_THROWS_WITH_AS(CsvReader(empty, "the bench CSV", "a `hisparse bench --csv` header"),
                       (empty + ": empty file, expected a `hisparse bench --csv` header").c_str(), Error);
  // A missing column names line 1 and the hint; a short row names its line and
  // both counts.
  const std::string short_row = write_csv("short.csv", "a,b\n1,2\n3\n");
  CsvReader csv(short_row, "the test CSV", "a,b");
  CHECK_THROWS_WITH_AS(csv.column("median_us", "expected a bench CSV"),
                       (short_row + ":1: the header lacks column 'median_us' (expected a bench CSV)").c_str(), Error);
  std::vector<std::string> row;
  REQUIRE(csv.next(row));
  CHECK_THROWS_WITH_AS(csv.bad(row, 1, "a time in µs > 0"),
                       (short_row + ":2: column b is '2' (expected a time in µs > 0)").c_str(), Error);
  CHECK_THROWS_WITH_AS(csv.next(row), (short_row + ":3: 1 fields, the header has 2").c_str(), Error);
}
