// @brief Page granularity and per-KV-head selection (sim/select/page_select.h) on inputs whose answer is known: one
// page holding all the attention, Quest's bound over random pages, two KV heads that want disjoint pages, sink + recent
// in pages, and the study's invariants at page granularity and per KV head (oracle page recall 1; bytes = page misses x
// P x row bytes; with one KV head, per-KV-head rows equal the shared ones).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "sim/select/page_select.h"
#include "sim/select/select_study.h"
#include "sim/select/selectors.h"

namespace hisparse::sim::select {
namespace {

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/traces/data/npz";

std::vector<float> noise(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(count);
  for (float& x : v) x = scale * static_cast<float>(static_cast<int32_t>(rng() % 2001) - 1000) / 1000.0f;
  return v;
}

TEST_CASE("page helpers: sums, maxima, ranking, positions, sink + recent pages") {
  const std::vector<double> s = {1, 2, 3, 4, 5, 0.5, 9, 0, 1, 1};
  CHECK(page_sums(s, 10, 4) == std::vector<double>{10, 14.5, 2});
  CHECK(page_maxima(s, 10, 4) == std::vector<double>{4, 9, 1});
  CHECK(page_sums(s, 5, 4) == std::vector<double>{10, 5});  // positions >= n do not count
  CHECK(top_pages({1, 3, 3, 0}, 2) == std::vector<int32_t>{1, 2});  // ties: lower page first
  CHECK(top_pages({1, 3}, 5) == std::vector<int32_t>{1, 0});
  CHECK(page_positions({5, 0}, 90, 16).size() == 10 + 16);  // page 5 holds 80..89 at n = 90
  CHECK(page_positions({5, 0}, 90, 16).front() == 80);
  CHECK(sink_recent_pages(100, 16, 3, 4) == std::vector<int32_t>{0, 5, 6});
  CHECK(sink_recent_pages(100, 16, 3, 0) == std::vector<int32_t>{4, 5, 6});
  CHECK(sink_recent_pages(100, 16, 3, 20) == std::vector<int32_t>{0, 1, 6});
  CHECK(sink_recent_pages(40, 16, 3, 4) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("page oracle: keys built so that one page holds all the attention") {
  const int32_t n = 200, D = 8, P = 16, hot = 5;  // page 5 = positions 80..95
  std::vector<float> q = {1, -1, 0.5f, 0, 0, 2, -0.5f, 1};
  std::vector<float> rows = noise(static_cast<size_t>(n) * D, 0.01f, 9);
  for (int32_t j = hot * P; j < (hot + 1) * P; ++j)
    for (int32_t d = 0; d < D; ++d) rows[static_cast<size_t>(j) * D + d] = 4.0f * q[d] + rows[static_cast<size_t>(j) * D + d];
  LayerKeys keys(rows, n, 1, D);
  const Query query{q.data(), 1, 1.0f, n};
  const auto score = true_scores(keys, query);
  const auto mass = page_sums(score, n, P);
  CHECK(mass[hot] > 0.999);
  const auto pages = top_pages(mass, 1);
  REQUIRE(pages == std::vector<int32_t>{hot});
  // One page of budget covers 16 tokens and keeps all but ~1e-3 of the attention; the token oracle at K = 16 the same.
  const auto covered = page_positions(pages, n, P);
  CHECK(selected_mass(score, covered) == doctest::Approx(selected_mass(score, top_k_by_score(score, n, 16))));
  // Quest ranks the same page first.
  const QuestPages qp = build_quest_pages(keys, P);
  CHECK(top_pages(quest_page_scores(qp, keys, query), 1) == std::vector<int32_t>{hot});
}

TEST_CASE("Quest's bound is >= every key's true score in its page: random pages, sizes and dims (property)") {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 60; ++trial) {
    const int32_t D = 1 + static_cast<int32_t>(rng() % 24), P = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t n = 1 + static_cast<int32_t>(rng() % 150), kv = 1 + static_cast<int32_t>(rng() % 2);
    LayerKeys keys(noise(static_cast<size_t>(n) * kv * D, 3.0f, rng()), n, kv, D);
    const QuestPages pages = build_quest_pages(keys, P);
    const std::vector<float> q = noise(static_cast<size_t>(D), 2.0f, rng());
    for (int32_t g = 0; g < kv; ++g)
      for (int32_t p = 0; p < pages.pages; ++p) {
        const size_t base = (static_cast<size_t>(g) * pages.pages + p) * D;
        const float u = quest_bound(q.data(), &pages.mins[base], &pages.maxs[base], D);
        for (int32_t j = p * P; j < std::min(n, (p + 1) * P); ++j) {
          float dot = 0;
          for (int32_t d = 0; d < D; ++d) dot += q[d] * keys.row(j, g)[d];
          INFO("trial " << trial << " page " << p << " key " << j);
          // Exact in reals; in floats the bound's terms and the dot's differ by rounding of the same magnitude.
          REQUIRE(dot <= u + 1e-4f * (1.0f + std::fabs(u)));
        }
      }
  }
}

TEST_CASE("per KV head: two KV heads whose query heads want disjoint pages each get their own page") {
  // 2 KV heads, 2 query heads (one per group). Head 0's hot page is 2 (32..47), head 1's is 9 (144..159).
  const int32_t n = 200, D = 4, P = 16, G = 2;
  std::vector<float> q = {1, 0, 0, 0, 0, 1, 0, 0};  // head 0 looks along d0, head 1 along d1
  std::vector<float> rows = noise(static_cast<size_t>(n) * G * D, 0.01f, 4);
  auto at = [&](int32_t j, int32_t g, int32_t d) -> float& { return rows[(static_cast<size_t>(j) * G + g) * D + d]; };
  for (int32_t j = 32; j < 48; ++j) at(j, 0, 0) = 8.0f;
  for (int32_t j = 144; j < 160; ++j) at(j, 1, 1) = 6.0f;  // less peaked than head 0's
  LayerKeys keys(rows, n, G, D);
  const Query query{q.data(), 2, 1.0f, n};
  // Shared, one page of budget: head 0's page wins the summed score, head 1 gets nothing it wants.
  const auto shared = top_pages(page_sums(true_scores(keys, query), n, P), 1);
  CHECK(shared == std::vector<int32_t>{2});
  for (int32_t g = 0; g < G; ++g) {
    const LayerKeys hk = head_keys(keys, g);
    const Query hq = head_query(query, G, D, g);
    CHECK(hq.q_heads == 1);
    const auto score = true_scores(hk, hq);
    const int32_t want = g == 0 ? 2 : 9;
    CHECK(top_pages(page_sums(score, n, P), 1) == std::vector<int32_t>{want});
    CHECK(top_pages(quest_page_scores(build_quest_pages(hk, P), hk, hq), 1) == std::vector<int32_t>{want});
    // Group recall of the shared page against this group's own page oracle: ~1 for head 0, ~0 for head 1.
    const double own = selected_mass(score, page_positions({want}, n, P));
    const double got = selected_mass(score, page_positions(shared, n, P)) / own;
    if (g == 0) CHECK(got == doctest::Approx(1.0));
    else CHECK(got < 0.01);
  }
}

TEST_CASE("the study at page granularity and per KV head on the fixture: invariants and bytes") {
  const KqData d = load_kq(kData + "/kq_stored.npz");
  StudyOptions o;
  o.selectors = selector_names();
  o.ds_channels = 2;  // of the fixture's head_dim 4
  o.top_ks = {4, 8};
  o.buffer_multiples = {1, 2};
  o.clusters = 4;
  o.page_size = 2;
  o.page_sizes = {2, 4};
  o.per_kv_head = true;
  o.sinks = 2;
  o.indexer_dims = 2;
  o.threads = 1;
  const StudyResult r = run_study(d, o);
  // 3 granularities x {shared, per KV head} x 6 selectors x 2 K x (all + 2 layers).
  REQUIRE(r.rows.size() == 3 * 2 * 6 * 2 * 3);
  CHECK(r.rows.front().selector == "oracle");
  CHECK(r.rows.front().page_size == 0);
  CHECK(!r.rows.front().per_kv_head);
  for (const StudyRow& row : r.rows) {
    INFO(row.selector << " K " << row.top_k << " P " << row.page_size << " kvh " << row.per_kv_head << " layer " << row.layer);
    CHECK(row.tokens <= row.top_k);
    CHECK(row.group_recall.size() == 1);
    CHECK(row.unit_bytes == r.row_bytes * std::max(row.page_size, 1));
    if (row.selector == "oracle" && row.page_size == 0) CHECK(row.recall == 1.0);
    if (row.selector == "oracle" && row.page_size > 0) CHECK(row.page_recall == 1.0);
    if (row.page_size > 0) CHECK(row.recall <= row.page_recall + 1e-12);  // the token oracle bounds any page set
    REQUIRE(row.buffers.size() == 2);
    for (const BufferStats& b : row.buffers) {
      CHECK(b.buffer_tokens == b.buffer_size * std::max(row.page_size, 1));
      CHECK(b.h2d_bytes == b.misses * row.unit_bytes);
    }
  }
  // One KV head: the per-KV-head rows are the shared rows (same scores, same lists, same buffers).
  for (const StudyRow& a : r.rows)
    if (!a.per_kv_head)
      for (const StudyRow& b : r.rows)
        if (b.per_kv_head && b.selector == a.selector && b.top_k == a.top_k && b.page_size == a.page_size &&
            b.layer == a.layer) {
          INFO(a.selector << " K " << a.top_k << " P " << a.page_size << " layer " << a.layer);
          CHECK(b.recall == a.recall);
          CHECK(b.mass_share == a.mass_share);
          CHECK(b.buffers[0].misses == a.buffers[0].misses);
        }
  // Page lists are whole pages: every position of a written page list's pages < n is there.
  const auto& recs = r.traces.at({"quest", 8, 4, false});
  for (const auto& rec : recs)
    for (int32_t l = 0; l < 2; ++l) {
      std::vector<int32_t> list;
      for (int32_t i = 0; i < 8; ++i)
        if (rec.positions[static_cast<size_t>(l) * 8 + i] >= 0) list.push_back(rec.positions[static_cast<size_t>(l) * 8 + i]);
      for (int32_t p : list)
        for (int32_t j = p / 4 * 4; j < std::min(rec.seq_len, p / 4 * 4 + 4); ++j)
          CHECK(std::find(list.begin(), list.end(), j) != list.end());
    }
  o.threads = 2;
  CHECK(study_json(run_study(d, o)) == study_json(r));

  o.page_sizes = {3};
  CHECK_THROWS_WITH_AS(run_study(d, o), doctest::Contains("--top-k 4 is not a multiple of --page-size 3"), Error);
  o.page_sizes = {0};
  CHECK_THROWS_WITH_AS(run_study(d, o), doctest::Contains("page size 0 outside [1,"), Error);
}

}  // namespace
}  // namespace hisparse::sim::select
