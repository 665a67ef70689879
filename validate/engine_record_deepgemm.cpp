// @brief DeepGEMM's fp8 GEMMs from the engine record against cpu_ref's float64 block-scaled GEMM: the masked grouped
// GEMM of the routed experts (valid rows within the bound of engine_tolerance.h; what the rows past masked_m hold is
// reported, not judged) and the dense GEMM of the linear layers.
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/numerics/bf16.h"
#include "cpu_ref/block_scaled_gemm.h"
#include "validate/engine_tolerance.h"
#include "validate/engine_record.h"

namespace hisparse::validation {
namespace {

/// The reference and the kernel's output of the valid rows, group after group.
void valid_rows(const GemmRecord& g, std::vector<double>& ref, std::vector<double>& got, std::vector<int64_t>& where) {
  const int64_t kb = (g.k + cpu_ref::kGemmScaleBlock - 1) / cpu_ref::kGemmScaleBlock;
  const int64_t nb = (g.n + cpu_ref::kGemmScaleBlock - 1) / cpu_ref::kGemmScaleBlock;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int64_t rows = g.masked_m[static_cast<size_t>(grp)];
    if (rows == 0) continue;
    cpu_ref::BlockScaledGemmArgs args;
    args.m = rows, args.n = g.n, args.k = g.k;
    args.a = g.a.data() + grp * g.m * g.k;
    args.sfa = g.sfa.data() + grp * g.m * kb;
    args.b = g.b.data() + grp * g.n * g.k;
    args.sfb = g.sfb.data() + grp * nb * kb;
    const std::vector<double> d = cpu_ref::block_scaled_gemm_f64(args);
    ref.insert(ref.end(), d.begin(), d.end());
    for (int64_t e = 0; e < rows * g.n; ++e) {
      got.push_back(num::bf16_to_float(g.d[static_cast<size_t>(grp * g.m * g.n + e)]));
      where.push_back(grp * g.m * g.n + e);  // the element's index in the full [groups][m][n] output
    }
  }
}

EngineCheckRow gemm_row(const std::string& name, const GemmRecord& g) {
  std::vector<double> ref, got;
  std::vector<int64_t> where;
  valid_rows(g, ref, got, where);
  return tolerance_row(name, got, ref, kEngineGemmBound, {g.groups, g.m, g.n}, {"group", "row", "col"}, &where);
}

/// Rows past masked_m belong to no token. The record's output held zeros before the call, so a zero row means the
/// kernel left it alone; a written row is compared with the product of A's padding rows (what a kernel computing whole
/// row tiles writes). Either way nothing downstream reads them (DeepEP's combine takes masked_m rows per expert), so
/// the row informs and does not fail.
EngineCheckRow padding_row(const GemmRecord& g) {
  GemmRecord full = g;
  for (int32_t& m : full.masked_m) m = static_cast<int32_t>(g.m);
  std::vector<double> ref_all, got_all, ref, got;
  std::vector<int64_t> where_all, where;
  valid_rows(full, ref_all, got_all, where_all);
  int64_t written = 0;
  for (size_t e = 0; e < where_all.size(); ++e) {
    const int64_t grp = where_all[e] / (g.m * g.n), row_in = where_all[e] / g.n % g.m;
    if (row_in < g.masked_m[static_cast<size_t>(grp)]) continue;
    ref.push_back(ref_all[e]), got.push_back(got_all[e]), where.push_back(where_all[e]);
    written += g.d[static_cast<size_t>(where_all[e])] != 0;
  }
  EngineCheckRow row = tolerance_row("deepgemm-masked rows >= m", got, ref, kEngineGemmBound, {g.groups, g.m, g.n},
                                     {"group", "row", "col"}, &where);
  row.info = true;
  row.pass = true;
  row.mismatches = written;
  row.bound = "none (unread)";
  row.detail = written == 0 ? "left as the zeros set before the call"
                            : fmt::format("{} of {} elements written (not left zero), as the product of A's padding "
                                          "rows within max rel {:.3g}: the kernel computes whole row tiles; {}",
                                          written, row.elements, row.max_rel, row.detail);
  return row;
}

}  // namespace

void check_engine_deepgemm(const EngineRecord& record, EngineCheckResult& out) {
  out.rows.push_back(gemm_row("deepgemm-masked d", record.masked));
  out.rows.push_back(padding_row(record.masked));
  out.rows.push_back(gemm_row("deepgemm-dense d", record.dense));
}

}  // namespace hisparse::validation
