// @brief Worst errors against a float64 reference and the report rows they make (engine_tolerance.h).
#include "validate/engine_tolerance.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace hisparse::validation {

double bf16_ulp(double x) {
  const double a = std::fabs(x);
  // bf16 keeps 8 significand bits (7 stored): its ulp in [2^e, 2^(e+1)) is 2^(e-7); the subnormal ulp is 2^-133.
  return a >= std::ldexp(1.0, -126) ? std::ldexp(1.0, std::ilogb(a) - 7) : std::ldexp(1.0, -133);
}

ErrorStats measure_errors(const std::vector<double>& got, const std::vector<double>& ref, ErrorBound bound) {
  ErrorStats s;
  s.elements = static_cast<int64_t>(ref.size());
  double sq = 0.0;
  for (double r : ref) sq += r * r;
  s.floor = std::sqrt(sq / std::max<double>(1.0, static_cast<double>(ref.size())));
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]);
    if (!std::isfinite(got[i]) || !std::isfinite(err)) {
      ++s.over;
      if (s.worst < 0 || std::isfinite(s.max_rel)) s.worst = static_cast<int64_t>(i);
      s.max_abs = s.max_rel = s.max_ulp = INFINITY;
      continue;
    }
    const double scale = std::max(std::fabs(ref[i]), s.floor);
    const double rel = err / scale;
    if (rel > bound.rel) ++s.over;
    s.max_abs = std::max(s.max_abs, err);
    s.max_ulp = std::max(s.max_ulp, err / bf16_ulp(scale));
    if (rel > s.max_rel || s.worst < 0) {
      s.max_rel = rel;
      s.worst = static_cast<int64_t>(i);
    }
  }
  return s;
}

std::string describe_element(int64_t i, const std::vector<int64_t>& dims, const std::vector<std::string>& names,
                             double got, double ref) {
  std::vector<int64_t> at(dims.size());
  int64_t rest = i;
  for (size_t d = dims.size(); d-- > 0;) {
    at[d] = rest % dims[d];
    rest /= dims[d];
  }
  std::string where;
  for (size_t d = 0; d < dims.size(); ++d) where += fmt::format("{}{} {}", d ? ", " : "", names[d], at[d]);
  return fmt::format("element {} ({}): got {:.7g}, reference {:.7g}", i, where, got, ref);
}

EngineCheckRow tolerance_row(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                             ErrorBound bound, const std::vector<int64_t>& dims, const std::vector<std::string>& names,
                             const std::vector<int64_t>* where) {
  const ErrorStats s = measure_errors(got, ref, bound);
  EngineCheckRow row;
  row.name = name;
  row.elements = s.elements;
  row.mismatches = s.over;
  row.max_abs = s.max_abs, row.max_rel = s.max_rel, row.max_ulp = s.max_ulp;
  row.bound = fmt::format("rel 2^{} (floor {:.2g})", std::ilogb(bound.rel), s.floor);  // every bound is a power of two
  row.pass = s.over == 0;
  if (s.worst >= 0) {
    const int64_t at = where ? (*where)[static_cast<size_t>(s.worst)] : s.worst;
    row.detail = "worst " + describe_element(at, dims, names, got[s.worst], ref[s.worst]);
  }
  return row;
}

}  // namespace hisparse::validation
