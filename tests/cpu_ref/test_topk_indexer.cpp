// @brief cpu_ref top-k against a full sort (ties, short rows, order) and the indexer against float64.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "cpu_ref/indexer.h"
#include "cpu_ref/topk.h"
#include "core/numerics/scalar_ops.h"

using namespace hisparse;

TEST_CASE("topk cpu_ref: equals a full stable sort, ties to the smaller position, ascending output") {
  std::mt19937_64 g(5);
  for (int c = 0; c < 200; ++c) {
    const int n = 1 + int(g() % 400), k = 1 + int(g() % 64), distinct = 1 + int(g() % 6);
    std::vector<float> s(static_cast<size_t>(n));
    for (auto& v : s) v = float(g() % uint64_t(distinct)) - 2.0f;
    if (c % 7 == 0) s[0] = -0.0f;
    std::vector<int32_t> len{n}, out(size_t(k), -7);
    TopkArgs a;
    a.rows = 1;
    a.stride = n;
    a.k = k;
    a.scores = s.data();
    a.length = len.data();
    a.out = out.data();
    cpu_ref::topk(a);
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t x, int32_t y) { return num::topk_key(s[x]) > num::topk_key(s[y]); });
    std::vector<int32_t> expect(size_t(k), -1);
    for (int i = 0; i < std::min(n, k); ++i) expect[i] = order[i];
    std::sort(expect.begin(), expect.begin() + std::min(n, k));
    REQUIRE_MESSAGE(out == expect, "case " << c << " n=" << n << " k=" << k);
  }
}

TEST_CASE("topk cpu_ref: a row shorter than K returns all its positions then -1") {
  std::vector<float> s{3, 1, 2, 9, 9};
  std::vector<int32_t> len{3}, out(5, -7);
  TopkArgs a;
  a.rows = 1;
  a.stride = 5;
  a.k = 5;
  a.scores = s.data();
  a.length = len.data();
  a.out = out.data();
  cpu_ref::topk(a);
  CHECK(out == std::vector<int32_t>{0, 1, 2, -1, -1});
}

TEST_CASE("indexer cpu_ref: close to float64, -inf past seq_len") {
  std::mt19937_64 g(8);
  auto u = [&] { return float(int64_t(g() >> 40) - (int64_t(1) << 23)) / 8388608.0f; };
  IndexerArgs a;
  a.tokens = 2;
  a.max_len = 40;
  std::vector<num::Bf16Bits> q(2 * kIndexerHeads * kIndexerDim), keys(70 * kIndexerDim);
  for (auto& v : q) v = num::float_to_bf16(u());
  for (auto& v : keys) v = num::float_to_bf16(u());
  std::vector<float> w(2 * kIndexerHeads), scores(2 * 40, 123.0f);
  for (auto& v : w) v = u();
  std::vector<int64_t> start{0, 35};
  std::vector<int32_t> len{35, 30};
  a.q = q.data();
  a.weights = w.data();
  a.keys = keys.data();
  a.key_rows = 70;
  a.key_start = start.data();
  a.seq_len = len.data();
  a.scores = scores.data();
  cpu_ref::indexer_scores(a);
  for (int t = 0; t < 2; ++t)
    for (int s = 0; s < 40; ++s) {
      const float got = scores[size_t(t) * 40 + s];
      if (s >= len[t]) {
        CHECK(got == -num::hs_inf());
        continue;
      }
      double ref = 0;
      for (int h = 0; h < kIndexerHeads; ++h) {
        double d = 0;
        for (int e = 0; e < kIndexerDim; ++e)
          d += double(num::bf16_to_float(q[(size_t(t) * kIndexerHeads + h) * kIndexerDim + e])) *
               double(num::bf16_to_float(keys[(size_t(start[t]) + s) * kIndexerDim + e]));
        ref += double(w[size_t(t) * kIndexerHeads + h]) * std::max(d, 0.0);
      }
      CHECK(std::fabs(got - ref) <= 1e-4 * (1.0 + std::fabs(ref)));
    }
}
