// @brief The tolerance contracts of the engine record (docs/numerics.md, "The engine's kernels against the CPU
// reference"): the bounds, and the worst errors of a kernel's output against a float64 reference as the report prints
// them (max abs, max rel with a floor, max bf16 ulps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "validate/engine_record.h"

namespace hisparse::validation {

/// A tolerance contract: an element passes when |got − ref| <= rel · max(|ref|, floor), floor = rms(ref) over the
/// case. The floor keeps an output that cancels to near zero (a sum of terms of either sign: attention over V, a GEMM
/// row) from turning the absolute error its terms carry into an unbounded relative one: such an element is judged
/// against the typical magnitude of its case.
struct ErrorBound {
  double rel = 0.0;
};

// The bounds (docs/numerics.md, "The engine's kernels against the CPU reference", argues each; measured on the H100
// record of 2026-11-28 with the worst element in brackets):
// - FlashMLA out, bf16 and fp8 KV: 2^-6. The kernel rounds P to bf16 before its P·V wgmma (2^-9 per weight, random
//   over K) and the output to bf16 (0.5 ulp, at most 2^-8 relative); about 2.4 ulps at a typical output [0.0084].
// - DeepGEMM D: 2^-7, twice the bf16 output rounding's worst 2^-8; the fp32 promotion of each 128-k block adds ~2^-14
//   [0.0040].
// - lse (fp32): 2^-16, ten times the worst rounding of an fp32 sum over K = 128 weights (K · 2^-24 relative in l,
//   divided by lse ≈ 5) [1.3e-7].
constexpr ErrorBound kEngineMlaBound{1.0 / 64.0};
constexpr ErrorBound kEngineGemmBound{1.0 / 128.0};
constexpr ErrorBound kEngineLseBound{1.0 / 65536.0};

struct ErrorStats {
  int64_t elements = 0;
  int64_t over = 0;       // elements over the bound, NaN and infinities included
  double floor = 0.0;     // the absolute floor of the relative error
  double max_abs = 0.0, max_rel = 0.0;
  double max_ulp = 0.0;   // bf16 ulps at max(|ref|, floor)
  int64_t worst = -1;     // element of max_rel
};

/// The bf16 ulp at x: 2^(⌊log2 |x|⌋ − 7) in the normal range, 2^-133 below it. A correctly rounded bf16 result is
/// within 0.5 of it from the exact value.
double bf16_ulp(double x);

ErrorStats measure_errors(const std::vector<double>& got, const std::vector<double>& ref, ErrorBound bound);

/// "element 1234 (b 0, h 2, c 210): got 0.0312, reference 0.03118" with the element's index unflattened by `dims`.
std::string describe_element(int64_t i, const std::vector<int64_t>& dims, const std::vector<std::string>& names,
                             double got, double ref);

/// A tolerance row of the report: the stats against `bound`, the worst element described through `dims` / `names`
/// (its index in the full output is where[i] when `where` is given: the GEMM compares the valid rows only).
EngineCheckRow tolerance_row(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                             ErrorBound bound, const std::vector<int64_t>& dims, const std::vector<std::string>& names,
                             const std::vector<int64_t>* where = nullptr);

}  // namespace hisparse::validation
