// @brief `hisparse validate` operations "indexer" and "indexer-fp8" (lightning-indexer scores with bf16 or fp8
// E4M3 q and keys, bit for bit) and "topk" (selected positions, exactly): the reference backend against the
// device backend, through the Backend interface, on fresh random cases.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "core/parallel/task_pool.h"
#include "validate/validate.h"
#include "validate/validate_random_values.h"
#include "cpu_ref/sparse_attention_compare.h"

namespace hisparse::validation {
namespace {

/// Runs fn(case index i, seed) on all cores; each returns a failure message ("" = pass) and the value count.
template <typename Fn>
void run_parallel(const ValidateContext& ctx, const char* op, OpReport& report, Fn fn) {
  const int64_t n = ctx.options.cases;
  std::vector<std::pair<std::string, int64_t>> res(size_t(std::max<int64_t>(n, 0)));
  std::vector<std::string> contexts(res.size());
  // A case's error is its own failure row, so no task throws out of the pool.
  parallel_for(res.size(), std::min(32, hardware_threads()), [&](size_t i) {
    const uint64_t seed = case_seed(ctx.options.seed, op, ctx.options.start_case + static_cast<int64_t>(i));
    try {
      res[i] = fn(seed, contexts[i]);
    } catch (const std::exception& e) {
      res[i] = {std::string("error: ") + e.what(), 0};
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = ctx.options.start_case + i;
    Checker c(report, case_seed(ctx.options.seed, op, index), index, contexts[size_t(i)]);
    ++report.cases;
    report.values += res[size_t(i)].second;
    if (!res[size_t(i)].first.empty()) c.fail(res[size_t(i)].first);
  }
}

/// The shape of an indexer case: 1 or 2 tokens, sequences of up to 0..3, 1..300 or 300..1100 positions, a row
/// stride up to 40 longer. Returns the longest sequence a token may get.
int32_t draw_indexer_shape(Rng& rng, IndexerArgs& a) {
  a.tokens = int32_t(rng.range(1, 2));
  const int64_t lmode = rng.below(5);
  const int32_t max_seq = lmode == 0   ? int32_t(rng.range(0, 3))
                          : lmode == 1 ? int32_t(rng.range(300, 1100))
                                       : int32_t(rng.range(1, 300));
  a.max_len = max_seq + rng.range(0, 40);
  return max_seq;
}

/// Each token's scored range of key rows, into `len` and `start` (which `a` then points to): seq_len[t] in
/// 0..max_seq, each range starting 0..5 rows after the previous one ends; key_rows one more than the last needs.
void draw_key_ranges(Rng& rng, int32_t max_seq, IndexerArgs& a, std::vector<int32_t>& len,
                     std::vector<int64_t>& start) {
  len.assign(size_t(a.tokens), 0);
  start.assign(size_t(a.tokens), 0);
  int64_t rows = 0;
  for (int32_t t = 0; t < a.tokens; ++t) {
    len[t] = int32_t(rng.range(0, max_seq));
    start[t] = rows + rng.range(0, 5);
    rows = start[t] + len[t];
  }
  a.key_rows = rows + 1;
  a.key_start = start.data();
  a.seq_len = len.data();
}

/// Runs both backends on `a` and compares the scores bit for bit. bf16: scores poisoned with NaN first, and a NaN
/// anywhere is a mismatch (that path does not canonicalise NaN). fp8: its NaN output is defined (0x7fc00000), so
/// each side is poisoned with its own non-canonical NaN, and a score passes when both sides hold the same bits and
/// a NaN is the canonical one: an element neither backend wrote differs.
std::pair<std::string, int64_t> compare_indexer(IndexerArgs a, Backend& ref_be, Backend& dut_be) {
  const size_t ns = size_t(a.tokens) * size_t(a.max_len);
  const bool fp8 = a.dtype == IndexerDtype::kFp8E4m3;
  std::vector<float> ref(ns, fp8 ? num::bits_float(0x7fa00001u) : num::canonical_nan_f32());
  std::vector<float> dut(ns, fp8 ? num::bits_float(0x7fb00002u) : num::canonical_nan_f32());
  a.scores = ref.data();
  ref_be.indexer_scores(a);
  a.scores = dut.data();
  dut_be.indexer_scores(a);
  int64_t i = -1;
  if (!fp8) {
    i = cpu_ref::first_bits_mismatch(ref.data(), dut.data(), int64_t(ns));
  } else {
    for (size_t e = 0; e < ns && i < 0; ++e) {
      const uint32_t r = num::float_bits(ref[e]);
      if (r != num::float_bits(dut[e]) || (ref[e] != ref[e] && r != 0x7fc00000u)) i = int64_t(e);
    }
  }
  if (i < 0) return {"", int64_t(ns)};
  return {fmt::format("scores[token {}][pos {}]: {}", i / a.max_len, i % a.max_len,
                      cpu_ref::describe_f32_pair(ref[size_t(i)], dut[size_t(i)])),
          int64_t(ns)};
}

std::pair<std::string, int64_t> indexer_case(uint64_t seed, std::string& context, Backend& ref_be, Backend& dut_be) {
  Rng rng(seed);
  IndexerArgs a;
  const int32_t max_seq = draw_indexer_shape(rng, a);
  const int64_t mag = rng.below(6);
  const int qe = mag == 0 ? int(rng.range(20, 50)) : mag == 1 ? int(rng.range(-60, -30)) : int(rng.range(-2, 2));
  const int spread = mag == 2 ? 16 : 0;
  std::vector<num::Bf16Bits> q(size_t(a.tokens) * kIndexerHeads * kIndexerDim);
  for (auto& v : q) v = random_bf16(rng, qe, spread);
  std::vector<float> w(size_t(a.tokens) * kIndexerHeads);
  for (auto& v : w) v = random_value(rng, mag == 0 ? -30 : 0, 0);
  std::vector<int32_t> len;
  std::vector<int64_t> start;
  draw_key_ranges(rng, max_seq, a, len, start);
  std::vector<num::Bf16Bits> keys(size_t(a.key_rows) * kIndexerDim);
  for (auto& v : keys) v = random_bf16(rng, qe, spread);
  if (rng.chance(1, 6) && a.key_rows > 1)  // equal scores: identical keys
    for (int64_t r = 1; r < a.key_rows; ++r) std::copy_n(keys.begin(), kIndexerDim, keys.begin() + r * kIndexerDim);
  a.q = q.data();
  a.weights = w.data();
  a.keys = keys.data();
  context = fmt::format("T={} max_len={} q,k 2^{} spread {}", a.tokens, a.max_len, qe, spread);
  return compare_indexer(a, ref_be, dut_be);
}

/// E4M3 code regimes of the fp8 indexer cases (q and keys draw theirs independently).
enum class Fp8Regime { kAny, kQuantised, kSubnormal, kEdges, kWithNan, kCount };
const char* fp8_regime_name(Fp8Regime r) {
  switch (r) {
    case Fp8Regime::kAny: return "any";
    case Fp8Regime::kQuantised: return "quantised";
    case Fp8Regime::kSubnormal: return "subnormal";
    case Fp8Regime::kEdges: return "edges";
    default: return "with-nan";
  }
}

/// One code of a regime: kAny every non-NaN code; kQuantised what a row scaled to amax 448 mostly holds (exponent
/// fields 8..15: magnitudes 1 .. 448); kSubnormal exponent field 0 or 1 (±0, m·2^-9, the smallest normals);
/// kEdges ±0, ±2^-9, ±2^-6 (smallest normal), ±1, ±448; kWithNan any code, the NaN codes 0x7f/0xff one in eight.
num::Fp8Bits random_fp8(Rng& rng, Fp8Regime regime) {
  static constexpr num::Fp8Bits kEdges[] = {0x00, 0x01, 0x08, 0x38, 0x7e};
  const auto sign = num::Fp8Bits(rng.chance(1, 2) ? 0x80 : 0x00);
  switch (regime) {
    case Fp8Regime::kQuantised: {
      const auto e = uint32_t(rng.range(8, 15));
      const auto m = uint32_t(rng.range(0, e == 15 ? 6 : 7));
      return num::Fp8Bits(sign | (e << 3) | m);
    }
    case Fp8Regime::kSubnormal: return num::Fp8Bits(sign | rng.below(16));
    case Fp8Regime::kEdges: return num::Fp8Bits(sign | kEdges[rng.below(5)]);
    case Fp8Regime::kWithNan:
      if (rng.chance(1, 8)) return num::Fp8Bits(sign | 0x7f);
      [[fallthrough]];
    default: {
      const auto c = num::Fp8Bits(rng.below(254));  // the 254 non-NaN codes 0x00..0x7e, 0x80..0xfe
      return c >= 0x7f ? num::Fp8Bits(c + 1) : c;
    }
  }
}

/// fp8 E4M3 q and keys with one fp32 scale per key row (DeepSeek-V3.2 as served), every edge the contract defines:
/// subnormal codes, ±448, NaN codes (their head contributes +0), zero and subnormal scales, and, one case in eight,
/// scales of any bits (negative, infinite, NaN: the output is canonicalised, so it is still bit-exact).
std::pair<std::string, int64_t> indexer_fp8_case(uint64_t seed, std::string& context, Backend& ref_be,
                                                 Backend& dut_be) {
  Rng rng(seed);
  IndexerArgs a;
  a.dtype = IndexerDtype::kFp8E4m3;
  const int32_t max_seq = draw_indexer_shape(rng, a);
  const auto qr = Fp8Regime(rng.below(uint64_t(Fp8Regime::kCount)));
  const auto kr = Fp8Regime(rng.below(uint64_t(Fp8Regime::kCount)));
  std::vector<num::Fp8Bits> q(size_t(a.tokens) * kIndexerHeads * kIndexerDim);
  for (auto& v : q) v = random_fp8(rng, qr);
  a.q_fp8 = q.data();
  // Weights as the model folds them (head scale · softmax scale · q's quantisation scale): small, either sign,
  // some exactly zero.
  const int wexp = int(rng.range(-12, 0));
  std::vector<float> w(size_t(a.tokens) * kIndexerHeads);
  for (auto& v : w) v = rng.chance(1, 16) ? 0.0f : random_value(rng, wexp, 2);
  a.weights = w.data();
  std::vector<int32_t> len;
  std::vector<int64_t> start;
  draw_key_ranges(rng, max_seq, a, len, start);
  std::vector<num::Fp8Bits> keys(size_t(a.key_rows) * kIndexerDim);
  for (auto& v : keys) v = random_fp8(rng, kr);
  a.keys_fp8 = keys.data();
  // Scales: 0 amax/448-like values, 1 powers of two (ue8m0), 2 a third exactly zero, 3 fp32 subnormals, 4 any bits.
  const int64_t smode = rng.chance(1, 8) ? 4 : rng.below(4);
  std::vector<float> scale(size_t(a.key_rows));
  for (auto& v : scale) {
    switch (smode) {
      case 0: v = std::fabs(random_value(rng, -int(rng.range(2, 12)), 0)); break;
      case 1: v = pow2f(int(rng.range(-20, 4))); break;
      case 2: v = rng.chance(1, 3) ? 0.0f : pow2f(int(rng.range(-10, 0))); break;
      case 3: v = num::bits_float(uint32_t(rng.below(0x800000))); break;
      default: v = num::bits_float(uint32_t(rng.next())); break;
    }
  }
  if (rng.chance(1, 6) && a.key_rows > 1)  // equal scores: identical keys and scales
    for (int64_t r = 1; r < a.key_rows; ++r) {
      std::copy_n(keys.begin(), kIndexerDim, keys.begin() + r * kIndexerDim);
      scale[size_t(r)] = scale[0];
    }
  a.key_scale = scale.data();
  context = fmt::format("T={} max_len={} q {} keys {} scales mode {} w 2^{}", a.tokens, a.max_len,
                        fp8_regime_name(qr), fp8_regime_name(kr), smode, wexp);
  return compare_indexer(a, ref_be, dut_be);
}

std::pair<std::string, int64_t> topk_case(uint64_t seed, std::string& context, Backend& ref_be, Backend& dut_be) {
  Rng rng(seed);
  TopkArgs a;
  a.rows = int32_t(rng.range(1, 4));
  const int64_t kmode = rng.below(4);
  a.k = kmode == 0 ? 2048 : kmode == 1 ? int32_t(rng.range(1, 8)) : int32_t(rng.range(1, 600));
  const int64_t smode = rng.below(12);
  a.stride = smode == 0 ? 131072 : rng.range(1, 3 * a.k + 50);
  std::vector<int32_t> len(size_t(a.rows));
  for (auto& l : len) {
    const int64_t m = rng.below(4);
    l = m == 0 ? int32_t(rng.range(0, std::min<int64_t>(a.k, a.stride))) : m == 1 ? int32_t(a.stride) : int32_t(rng.range(0, a.stride));
  }
  const int64_t vmode = rng.below(6);
  std::vector<float> s(size_t(a.rows) * size_t(a.stride));
  const int distinct = int(rng.range(1, 5));
  for (auto& v : s) {
    switch (vmode) {
      case 0: v = float(rng.below(uint64_t(distinct))) * 0.5f; break;      // heavy ties
      case 1: v = 1.5f; break;                                             // all equal
      case 2: v = num::bits_float(uint32_t(rng.next())); break;            // any bits: NaN, inf, -0, subnormals
      case 3: v = rng.chance(1, 2) ? 0.0f : -0.0f; break;                  // signed zeros (equal)
      default: v = random_value(rng, int(rng.range(-20, 20)), 10); break;
    }
  }
  a.scores = s.data();
  a.length = len.data();
  context = fmt::format("rows={} K={} stride={} value mode {}", a.rows, a.k, a.stride, vmode);
  const size_t no = size_t(a.rows) * size_t(a.k);
  std::vector<int32_t> ref(no, -7), dut(no, -7);
  a.out = ref.data();
  ref_be.topk(a);
  a.out = dut.data();
  dut_be.topk(a);
  const int64_t i = cpu_ref::first_mismatch(ref.data(), dut.data(), int64_t(no));
  if (i < 0) return {"", int64_t(no)};
  return {fmt::format("out[row {}][{}]: reference {}, device {}", i / a.k, i % a.k, ref[size_t(i)], dut[size_t(i)]),
          int64_t(no)};
}

}  // namespace

void validate_indexer(const ValidateContext& ctx, std::vector<OpReport>& out) {
  OpReport r("indexer", "exact");
  run_parallel(ctx, "indexer", r, [&](uint64_t seed, std::string& c) { return indexer_case(seed, c, ctx.ref, ctx.dut); });
  out.push_back(r);
}

void validate_indexer_fp8(const ValidateContext& ctx, std::vector<OpReport>& out) {
  OpReport r("indexer-fp8", "exact");
  run_parallel(ctx, "indexer-fp8", r,
               [&](uint64_t seed, std::string& c) { return indexer_fp8_case(seed, c, ctx.ref, ctx.dut); });
  out.push_back(r);
}

void validate_topk(const ValidateContext& ctx, std::vector<OpReport>& out) {
  OpReport r("topk", "exact");
  run_parallel(ctx, "topk", r, [&](uint64_t seed, std::string& c) { return topk_case(seed, c, ctx.ref, ctx.dut); });
  out.push_back(r);
}

}  // namespace hisparse::validation
