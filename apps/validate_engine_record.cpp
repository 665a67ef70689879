// @brief `hisparse validate --engine-record FILE`: the table of the engine-kernel check (validate/engine_record.h):
// one row per case and output with its contract, elements, mismatches or worst errors, bound and verdict; the worst
// element or first mismatch of each row and the findings below it. CPU only. Exit 1 on any FAIL.
#include <cmath>
#include <string>

#include <fmt/core.h>

#include "apps/command.h"
#include "validate/engine_record.h"

namespace hisparse::apps {

namespace {

std::string num_or_dash(double v, bool dash) {
  if (dash || std::isnan(v)) return "-";
  return fmt::format("{:.3g}", v);
}

}  // namespace

int run_validate_engine_record(const std::string& path) {
  const validation::EngineRecord record = validation::read_engine_record(path);
  const validation::EngineCheckResult result = validation::check_engine_record(record);
  fmt::print("engine record {}: the engine's kernels against the CPU reference (docs/numerics.md)\n\n", path);
  fmt::print("{:<27} {:<9} {:>9} {:>10} {:>9} {:>9} {:>8}  {:<25} {}\n", "case", "contract", "elements", "mismatch",
             "max abs", "max rel", "max ulp", "bound", "verdict");
  for (const auto& r : result.rows) {
    fmt::print("{:<27} {:<9} {:>9} {:>10} {:>9} {:>9} {:>8}  {:<25} {}\n", r.name, r.exact ? "exact" : r.info ? "info" : "tolerance",
               r.elements, r.mismatches, num_or_dash(r.max_abs, r.exact), num_or_dash(r.max_rel, r.exact),
               num_or_dash(r.max_ulp, r.exact), r.bound, r.info ? "INFO" : r.pass ? "PASS" : "FAIL");
  }
  fmt::print("\n");
  for (const auto& r : result.rows)
    if (!r.detail.empty()) fmt::print("{}: {}\n", r.name, r.detail);
  for (const auto& n : result.notes) fmt::print("note: {}\n", n);
  fmt::print("validate --engine-record: {} rows, {} failed: {}\n", result.rows.size(),
             [&] {
               size_t f = 0;
               for (const auto& r : result.rows) f += r.pass ? 0 : 1;
               return f;
             }(),
             result.passed() ? "PASS" : "FAIL");
  return result.passed() ? 0 : 1;
}

}  // namespace hisparse::apps
