// @brief What a validation run is asked for and what it reports (validate.h runs it). Standard types only, so the
// Python module binds these very structs without the library's dependencies.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hisparse::validation {

struct ValidateOptions {
  int64_t cases = 1000;        // random cases per operation
  int64_t start_case = 0;      // first case index (to rerun one failing case)
  uint64_t seed = 1;
  std::string trace;           // optional top-k trace replayed through both backends
  int64_t trace_steps = 0;     // 0 = whole trace
  std::vector<std::string> only;  // operation names to run (empty = all)
  bool progress = true;           // each operation's start and end and the ETA on stderr (Python: verbose=)
};

/// One row of the summary table: an operation (and variant, e.g. the copy mode) over many cases.
struct OpReport {
  OpReport(std::string op_name, std::string variant_name) : op(std::move(op_name)), variant(std::move(variant_name)) {}
  std::string op;
  std::string variant;
  int64_t cases = 0;
  int64_t values = 0;            // elements and bytes compared
  int64_t mismatched_cases = 0;
  int64_t rejected_both = 0;     // invalid-input cases that both backends rejected (as they must)
  std::string first_mismatch;    // empty = none
  double seconds = 0;
};

/// What to validate: the device backend ("cuda" | "cpu", the reference against itself), its kernel variants
/// (--kernel-config, cuda only) and the cases.
struct ValidateRequest {
  std::string backend = "cuda";
  bool backend_defaulted = false;  // the CLI's default: its error says "(the default)"
  std::string kernel_config = "default";
  ValidateOptions options;
};

struct ValidateResult {
  std::vector<OpReport> reports;  // one per operation and variant, in validate_ops() order
  int64_t cases = 0, mismatches = 0;
  bool passed() const { return mismatches == 0; }
};

}  // namespace hisparse::validation
