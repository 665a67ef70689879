// @brief The strict reader of one op-table CSV (see read_op_table_csv in op_table.h): every bad value is an error
// naming the file, the line, the column and the value.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/csv_reader.h"
#include "sim/optables/op_table.h"

namespace hisparse::sim {
namespace {

constexpr const char* kHeader =
    "op,library,commit,gpu,driver,sm_clock_mhz,params,batch,context,bytes,median_us,p10_us,p90_us,iters,method";
enum Col { kOp, kLibrary, kCommit, kGpu, kDriver, kClock, kParams, kBatch, kContext, kBytes, kMedian, kP10, kP90,
           kIters, kMethod, kColumns };

/// An op name: a lower-case letter, then lower-case letters, digits and '_' (plain checks: GCC 12 reports std::regex's
/// internals as maybe-uninitialized in the sanitizer build).
bool is_op_name(const std::string& s) {
  if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

}  // namespace

std::vector<OpRow> read_op_table_csv(const OpTableEntry& entry) {
  const std::string& path = entry.path;
  CsvReader csv(path, fmt::format("the op table named by the index (file: {})", entry.file),
                fmt::format("the header {}", kHeader));
  if (csv.header_line() != kHeader)
    throw_error("{}:1: header '{}' (expected exactly '{}')", path, csv.header_line(), kHeader);
  std::vector<OpRow> rows;
  std::string gpu, driver;
  int first_line = 0;
  std::vector<std::string> v;
  while (csv.next(v)) {
    const int ln = csv.line();
    auto bad = [&](int col, const std::string& expected) { csv.bad(v, static_cast<size_t>(col), expected); };
    auto integer = [&](int col, int64_t lo) {
      errno = 0;
      char* end = nullptr;
      const long long x = std::strtoll(v[col].c_str(), &end, 10);
      if (v[col].empty() || *end != 0 || errno != 0 || x < lo) bad(col, fmt::format("an integer >= {}", lo));
      return static_cast<int64_t>(x);
    };
    auto time = [&](int col) {
      char* end = nullptr;
      const double x = std::strtod(v[col].c_str(), &end);
      if (v[col].empty() || *end != 0 || !std::isfinite(x) || !(x > 0)) bad(col, "a time in µs, finite and > 0");
      return x;
    };
    OpRow r;
    r.line = ln;
    r.op = v[kOp];
    if (!is_op_name(r.op)) bad(kOp, "an op name of lower-case letters, digits and '_'");
    for (int col : {kLibrary, kCommit, kGpu, kDriver})
      if (v[col].empty()) bad(col, "a value: every row carries its provenance (library, commit, gpu, driver)");
    r.library = v[kLibrary];
    r.commit = v[kCommit];
    r.gpu = v[kGpu];
    r.driver = v[kDriver];
    const auto lib = entry.libraries.find(r.library);
    if (lib == entry.libraries.end())
      bad(kLibrary, fmt::format("a library the index entry of {} lists under libraries", entry.file));
    if (lib->second != r.commit)
      bad(kCommit, fmt::format("{}, the commit the index lists for {}", lib->second, r.library));
    if (gpu.empty()) {
      gpu = r.gpu, driver = r.driver, first_line = ln;
    } else if (r.gpu != gpu || r.driver != driver) {
      bad(r.gpu != gpu ? kGpu : kDriver,
          fmt::format("'{}' as on line {}: one table is one GPU and driver", r.gpu != gpu ? gpu : driver, first_line));
    }
    r.sm_clock_mhz = static_cast<int>(integer(kClock, 1));
    try {
      r.params = parse_op_params(v[kParams], fmt::format("{}:{}: column params", path, ln));
    } catch (const Error&) {
      bad(kParams, "key=value pairs joined by ';', keys sorted, each once");
    }
    r.batch = integer(kBatch, 0);
    r.context = integer(kContext, 0);
    r.bytes = integer(kBytes, 0);
    r.median_us = time(kMedian);
    r.p10_us = time(kP10);
    r.p90_us = time(kP90);
    if (r.p10_us > r.median_us) bad(kP10, fmt::format("<= median_us {}", v[kMedian]));
    if (r.p90_us < r.median_us) bad(kP90, fmt::format(">= median_us {}", v[kMedian]));
    r.iters = static_cast<int>(integer(kIters, 1));
    r.method = v[kMethod];
    if (r.method != "graph" && r.method != "events") bad(kMethod, "graph or events");
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw_error("{}: no rows under the header (an index entry names a table with measurements)", path);
  return rows;
}

}  // namespace hisparse::sim
