// @brief Bit and tolerance comparisons for tests and `hisparse validate`.
#include "cpu_ref/sparse_attention_compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace hisparse::cpu_ref {

void ToleranceStats::merge(const ToleranceStats& o) {
  if (first_failure < 0 && o.first_failure >= 0) first_failure = elements + o.first_failure;
  elements += o.elements;
  failures += o.failures;
  nan += o.nan;
  max_abs = std::max(max_abs, o.max_abs);
  max_rel = std::max(max_rel, o.max_rel);
}

ToleranceStats compare_values(const std::vector<double>& got, const std::vector<double>& ref, Tolerance tol) {
  ToleranceStats st;
  st.elements = int64_t(got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    bool ok;
    if (std::isnan(g) || std::isnan(r)) {
      ++st.nan;
      ok = false;
    } else if (std::isinf(g) || std::isinf(r)) {
      ok = g == r;
    } else {
      const double err = std::fabs(g - r);
      st.max_abs = std::max(st.max_abs, err);
      if (r != 0.0) st.max_rel = std::max(st.max_rel, err / std::fabs(r));
      ok = err <= tol.abs_tol + tol.rel_tol * std::fabs(r);
    }
    if (!ok) {
      if (st.first_failure < 0) st.first_failure = int64_t(i);
      ++st.failures;
    }
  }
  return st;
}

RelativeStats compare_relative(const std::vector<double>& fast, const std::vector<double>& exact,
                               const std::vector<double>& ref, Tolerance tol, double factor) {
  RelativeStats st;
  st.elements = int64_t(fast.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    const double f = fast[i], e = exact[i], r = ref[i];
    bool ok = true;
    if (std::isnan(f) || (std::isinf(f) && f != r)) {
      ++st.nan_inf;
      ok = false;
    } else if (std::isinf(r) || std::isnan(r)) {
      ok = f == r;
    } else {
      const double bar = tol.abs_tol + tol.rel_tol * std::fabs(r);
      const double err = std::fabs(f - r);
      const double allowed = factor * std::fabs(e - r) + bar;
      st.worst_ratio = std::max(st.worst_ratio, err / (std::fabs(e - r) + bar));
      if (std::fabs(r) > bar && std::signbit(f) != std::signbit(r)) {
        ++st.sign_flips;
        ok = false;
      } else {
        ok = err <= allowed;
      }
    }
    if (!ok) {
      if (st.first_failure < 0) st.first_failure = int64_t(i);
      ++st.failures;
    }
  }
  return st;
}

void RelativeStats::merge(const RelativeStats& o) {
  if (first_failure < 0 && o.first_failure >= 0) first_failure = elements + o.first_failure;
  elements += o.elements;
  failures += o.failures;
  nan_inf += o.nan_inf;
  sign_flips += o.sign_flips;
  worst_ratio = std::max(worst_ratio, o.worst_ratio);
}

std::vector<double> bf16_to_double(const num::Bf16Bits* v, int64_t n) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[i] = num::bf16_to_float(v[i]);
  return r;
}

std::vector<double> f32_to_double(const float* v, int64_t n) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[i] = v[i];
  return r;
}

int64_t first_bits_mismatch(const num::Bf16Bits* a, const num::Bf16Bits* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const bool nan = std::isnan(num::bf16_to_float(a[i])) || std::isnan(num::bf16_to_float(b[i]));
    if (a[i] != b[i] || nan) return i;
  }
  return -1;
}

int64_t first_bits_mismatch(const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (num::float_bits(a[i]) != num::float_bits(b[i]) || std::isnan(a[i]) || std::isnan(b[i])) return i;
  return -1;
}

int64_t first_mismatch(const int32_t* a, const int32_t* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return -1;
}

std::string describe_bf16_pair(num::Bf16Bits a, num::Bf16Bits b) {
  return fmt::format("0x{:04x} ({}) vs 0x{:04x} ({})", a, num::bf16_to_float(a), b, num::bf16_to_float(b));
}

std::string describe_f32_pair(float a, float b) {
  return fmt::format("0x{:08x} ({}) vs 0x{:08x} ({})", num::float_bits(a), a, num::float_bits(b), b);
}

}  // namespace hisparse::cpu_ref
