// @brief Comparisons used by tests and `hisparse validate`: bit equality (first difference) and tolerance checks
// against a float64 reference. A NaN never passes either check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/numerics/bf16.h"

namespace hisparse::cpu_ref {

/// out abs 1e-3 / rel 2.01/128 and lse abs 1e-6 / rel 8.01/65536: FlashMLA's own bar for its sparse decode tests.
/// An element passes when |got - ref| <= abs_tol + rel_tol * |ref| (and neither is NaN). Never called bit-exact.
struct Tolerance {
  double abs_tol = 0.0;
  double rel_tol = 0.0;
};
constexpr Tolerance kAttentionOutTol{1e-3, 2.01 / 128.0};
constexpr Tolerance kAttentionLseTol{1e-6, 8.01 / 65536.0};

struct ToleranceStats {
  int64_t elements = 0;
  int64_t failures = 0;    // includes NaN
  int64_t nan = 0;
  double max_abs = 0.0;    // over non-NaN elements
  double max_rel = 0.0;    // |got-ref| / |ref| where |ref| > 0
  int64_t first_failure = -1;
  void merge(const ToleranceStats& o);
};

/// -inf == -inf counts as exact (the all-skipped convention); any other infinity must match exactly too.
ToleranceStats compare_values(const std::vector<double>& got, const std::vector<double>& ref, Tolerance tol);

/// The fast kernel's bar in every input regime: per element, |fast − ref| <= factor × |exact − ref| + abs_tol +
/// rel_tol × |ref| — no worse than `factor` times the exact kernel's own error against float64, with the fixed bar
/// as a floor (where the exact kernel is exact). Always a failure: NaN, an infinity the reference does not have, and
/// a sign flip of an element the reference puts clearly away from zero (|ref| above the fixed bar).
struct RelativeStats {
  int64_t elements = 0;
  int64_t failures = 0;      // all failures, the three kinds below included
  int64_t nan_inf = 0;
  int64_t sign_flips = 0;
  int64_t first_failure = -1;
  double worst_ratio = 0.0;  // max over finite elements of |fast − ref| / (|exact − ref| + fixed bar)
  void merge(const RelativeStats& o);
};
RelativeStats compare_relative(const std::vector<double>& fast, const std::vector<double>& exact,
                               const std::vector<double>& ref, Tolerance tol, double factor);

std::vector<double> bf16_to_double(const num::Bf16Bits* v, int64_t n);
std::vector<double> f32_to_double(const float* v, int64_t n);

/// Index of the first element whose bits differ, or -1. A NaN anywhere counts as a difference.
int64_t first_bits_mismatch(const num::Bf16Bits* a, const num::Bf16Bits* b, int64_t n);
int64_t first_bits_mismatch(const float* a, const float* b, int64_t n);
int64_t first_mismatch(const int32_t* a, const int32_t* b, int64_t n);

/// "0x3f80 (1.0) vs 0x3f81 (1.0078125)" for reports.
std::string describe_bf16_pair(num::Bf16Bits a, num::Bf16Bits b);
std::string describe_f32_pair(float a, float b);

}  // namespace hisparse::cpu_ref
