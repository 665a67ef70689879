// @brief FlashMLA's sparse decode from the engine record against the float64 attention of cpu_ref: the bf16-KV kernel
// (flash_mla_sparse_fwd) and the fp8-KV kernel (flash_mla_with_kvcache on the V32 fp8 layout, dequantized exactly),
// out within the bound of engine_record.h, lse in whichever base FlashMLA writes (found, and said, here).
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/numerics/bf16.h"
#include "core/numerics/sparse_attention_args.h"
#include "cpu_ref/mla_fp8_cache.h"
#include "cpu_ref/sparse_attention.h"
#include "validate/engine_tolerance.h"
#include "validate/engine_record.h"

namespace hisparse::validation {
namespace {

std::vector<double> bf16_values(const std::vector<uint16_t>& bits) {
  std::vector<double> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = num::bf16_to_float(bits[i]);
  return v;
}

/// FlashMLA writes lse in natural log or in log2 (its kernels keep the softmax in base 2): the base whose reference
/// lies closer is the one it uses. Returns the row and says which base in a note.
EngineCheckRow lse_row(const std::string& name, const std::vector<float>& lse, const std::vector<double>& lse_ln,
                       const MlaRecord& m, EngineCheckResult& out) {
  std::vector<double> got(lse.begin(), lse.end()), ref_log2(lse_ln.size());
  for (size_t i = 0; i < lse_ln.size(); ++i) ref_log2[i] = lse_ln[i] / std::log(2.0);
  const ErrorStats ln = measure_errors(got, lse_ln, kEngineLseBound), l2 = measure_errors(got, ref_log2, kEngineLseBound);
  const bool base2 = l2.max_abs < ln.max_abs;
  out.notes.push_back(fmt::format("{}: FlashMLA's lse is {} (max |error| {:.3g} against the {} reference, {:.3g} "
                                  "against the {} one)", name, base2 ? "log2-based" : "natural-log", base2 ? l2.max_abs : ln.max_abs,
                                  base2 ? "log2" : "natural-log", base2 ? ln.max_abs : l2.max_abs,
                                  base2 ? "natural-log" : "log2"));
  EngineCheckRow row = tolerance_row(name + fmt::format(" ({})", base2 ? "log2" : "ln"), got, base2 ? ref_log2 : lse_ln,
                                     kEngineLseBound, {m.batch, m.heads}, {"b", "h"});
  row.max_ulp = NAN;  // an fp32 output: bf16 ulps say nothing
  return row;
}

}  // namespace

void check_engine_flashmla(const EngineRecord& record, EngineCheckResult& out) {
  const MlaRecord& m = record.mla;
  std::vector<num::Bf16Bits> scratch_out(m.bf16_out.size());
  std::vector<float> scratch_lse(m.bf16_lse.size());
  SparseAttentionArgs args;
  args.tokens = static_cast<int32_t>(m.batch);
  args.heads = static_cast<int32_t>(m.heads);
  args.top_k = static_cast<int32_t>(m.top_k);
  args.slots = m.rows;
  args.sm_scale = m.scale;
  args.q = m.q.data();
  args.kv = m.kv.data();
  args.indices = m.idx.data();
  args.out = scratch_out.data();  // the float64 reference writes out64 and lse64, not these
  args.lse = scratch_lse.data();
  const std::vector<int64_t> dims{m.batch, m.heads, kMlaVDim};
  const std::vector<std::string> names{"b", "h", "c"};

  std::vector<double> out64, lse64;
  cpu_ref::sparse_attention_f64(args, out64, lse64);
  out.rows.push_back(tolerance_row("flashmla-bf16 out", bf16_values(m.bf16_out), out64, kEngineMlaBound, dims, names));
  out.rows.push_back(lse_row("flashmla-bf16 lse", m.bf16_lse, lse64, m, out));

  // fp8 KV: the contract is the attention of the exactly dequantized cache (code × scale in double, rope bf16).
  const std::vector<double> kv64 = cpu_ref::dequantize_mla_fp8_rows(m.fp8_cache.data(), static_cast<int64_t>(m.fp8_cache.size()));
  std::vector<double> out8, lse8;
  cpu_ref::sparse_attention_f64(args, kv64, out8, lse8);
  const std::vector<double> got8 = bf16_values(m.fp8_out);
  out.rows.push_back(tolerance_row("flashmla-fp8 out", got8, out8, kEngineMlaBound, dims, names));
  out.rows.push_back(lse_row("flashmla-fp8 lse", m.fp8_lse, lse8, m, out));

  // What the kernel computes: the same attention with each dequantized value rounded to bf16 (FlashMLA's sm90 fp8
  // path converts the tile to bf16 before its bf16 wgmma). If that model is closer, the note says so.
  std::vector<double> kv_bf16(kv64.size());
  for (size_t i = 0; i < kv64.size(); ++i) kv_bf16[i] = num::bf16_to_float(num::float_to_bf16(static_cast<float>(kv64[i])));
  std::vector<double> out8b, lse8b;
  cpu_ref::sparse_attention_f64(args, kv_bf16, out8b, lse8b);
  const ErrorStats exact = measure_errors(got8, out8, kEngineMlaBound), model = measure_errors(got8, out8b, kEngineMlaBound);
  const ErrorStats fp8_vs_bf16 = measure_errors(out8, out64, kEngineMlaBound);
  out.notes.push_back(fmt::format(
      "flashmla-fp8 out: max rel {:.3g} / {:.3g} ulp against the exactly dequantized cache, {:.3g} / {:.3g} ulp against "
      "the cache dequantized to bf16 (the kernel's own rounding); the fp8 cache itself moves the exact output by max "
      "rel {:.3g} from the bf16 KV's",
      exact.max_rel, exact.max_ulp, model.max_rel, model.max_ulp, fp8_vs_bf16.max_rel));
}

}  // namespace hisparse::validation
