// @brief `hisparse validate` operations "indexer" (lightning-indexer scores, bit for bit) and "topk" (selected
// positions, exactly): the reference backend against the device backend, through the Backend interface, on fresh
// random cases.
#include <algorithm>
#include <atomic>
#include <thread>

#include <fmt/core.h>

#include "apps/validate.h"
#include "apps/validate_random_values.h"
#include "cpu_ref/sparse_attention_compare.h"

namespace hisparse::apps {
namespace {

/// Runs fn(case index i, seed) on all cores; each returns a failure message ("" = pass) and the value count.
template <typename Fn>
void run_parallel(const ValidateContext& ctx, const char* op, OpReport& report, Fn fn) {
  const int64_t n = ctx.options.cases;
  std::vector<std::pair<std::string, int64_t>> res(size_t(std::max<int64_t>(n, 0)));
  std::vector<std::string> contexts(res.size());
  std::atomic<int64_t> next{0};
  const unsigned workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++) {
        const uint64_t seed = case_seed(ctx.options.seed, op, ctx.options.start_case + i);
        try {
          res[size_t(i)] = fn(seed, contexts[size_t(i)]);
        } catch (const std::exception& e) {
          res[size_t(i)] = {std::string("error: ") + e.what(), 0};
        }
      }
    });
  for (auto& t : pool) t.join();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = ctx.options.start_case + i;
    Checker c(report, case_seed(ctx.options.seed, op, index), index, contexts[size_t(i)]);
    ++report.cases;
    report.values += res[size_t(i)].second;
    if (!res[size_t(i)].first.empty()) c.fail(res[size_t(i)].first);
  }
}

std::pair<std::string, int64_t> indexer_case(uint64_t seed, std::string& context, Backend& ref_be, Backend& dut_be) {
  Rng rng(seed);
  IndexerArgs a;
  a.tokens = int32_t(rng.range(1, 2));
  const int64_t lmode = rng.below(5);
  const int32_t max_seq = lmode == 0 ? int32_t(rng.range(0, 3)) : lmode == 1 ? int32_t(rng.range(300, 1100)) : int32_t(rng.range(1, 300));
  a.max_len = max_seq + rng.range(0, 40);
  const int64_t mag = rng.below(6);
  const int qe = mag == 0 ? int(rng.range(20, 50)) : mag == 1 ? int(rng.range(-60, -30)) : int(rng.range(-2, 2));
  const int spread = mag == 2 ? 16 : 0;
  std::vector<num::Bf16Bits> q(size_t(a.tokens) * kIndexerHeads * kIndexerDim);
  for (auto& v : q) v = random_bf16(rng, qe, spread);
  std::vector<float> w(size_t(a.tokens) * kIndexerHeads);
  for (auto& v : w) v = random_value(rng, mag == 0 ? -30 : 0, 0);
  std::vector<int32_t> len(size_t(a.tokens));
  std::vector<int64_t> start(size_t(a.tokens));
  int64_t rows = 0;
  for (int32_t t = 0; t < a.tokens; ++t) {
    len[t] = int32_t(rng.range(0, max_seq));
    start[t] = rows + rng.range(0, 5);
    rows = start[t] + len[t];
  }
  a.key_rows = rows + 1;
  std::vector<num::Bf16Bits> keys(size_t(a.key_rows) * kIndexerDim);
  for (auto& v : keys) v = random_bf16(rng, qe, spread);
  if (rng.chance(1, 6) && a.key_rows > 1)  // equal scores: identical keys
    for (int64_t r = 1; r < a.key_rows; ++r) std::copy_n(keys.begin(), kIndexerDim, keys.begin() + r * kIndexerDim);
  a.q = q.data();
  a.weights = w.data();
  a.keys = keys.data();
  a.key_start = start.data();
  a.seq_len = len.data();
  context = fmt::format("T={} max_len={} q,k 2^{} spread {}", a.tokens, a.max_len, qe, spread);
  const size_t ns = size_t(a.tokens) * size_t(a.max_len);
  std::vector<float> ref(ns, num::canonical_nan_f32()), dut(ns, num::canonical_nan_f32());
  a.scores = ref.data();
  ref_be.indexer_scores(a);
  a.scores = dut.data();
  dut_be.indexer_scores(a);
  const int64_t i = cpu_ref::first_bits_mismatch(ref.data(), dut.data(), int64_t(ns));
  if (i < 0) return {"", int64_t(ns)};
  return {fmt::format("scores[token {}][pos {}]: {}", i / a.max_len, i % a.max_len,
                      cpu_ref::describe_f32_pair(ref[size_t(i)], dut[size_t(i)])),
          int64_t(ns)};
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

void validate_topk(const ValidateContext& ctx, std::vector<OpReport>& out) {
  OpReport r("topk", "exact");
  run_parallel(ctx, "topk", r, [&](uint64_t seed, std::string& c) { return topk_case(seed, c, ctx.ref, ctx.dut); });
  out.push_back(r);
}

}  // namespace hisparse::apps
