// @brief The page trace adapter (traces/page_trace_source.h): token lists whose pages are known by construction, the
// width rule, a page replay counted by hand, round trips (pages -> their tokens -> pages; native write / read) and
// the errors for a bad page size or a list wider than the page width.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <set>

#include "sim/replay/replay_engine.h"
#include "tests/sim/vector_trace_source.h"
#include "tests/traces/trace_test_util.h"
#include "traces/page_trace_source.h"

namespace hisparse::traces {
namespace {

StepRecord record(int64_t req, int64_t step, int32_t n, std::vector<int32_t> positions) {
  StepRecord r;
  r.request_id = req;
  r.step = step;
  r.seq_len = n;
  r.positions = std::move(positions);
  return r;
}

TraceMeta meta_of(int32_t layers, int32_t k, InitialState st = InitialState::kIdentity) {
  TraceMeta m;
  m.layers = layers;
  m.top_k = k;
  m.initial_state = st;
  m.source = "mem";
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("page lists of a token trace built so its pages are known: distinct, ascending, padded; width = widest") {
  // P = 4. Layer 0 of step 0 touches pages {0, 2} (tokens 9, 1, 8, 3); layer 1 pages {1, 2, 4} (17 is in page 4).
  std::vector<StepRecord> recs = {
      record(7, 0, 18, {9, 1, 8, 3, -1, 17, 4, 11, 10, -1}),
      record(7, 1, 19, {-1, -1, -1, -1, -1, 18, -1, -1, -1, -1}),
      record(9, 0, 5, {0, 1, 2, 3, 4, -1, -1, -1, -1, -1}),
  };
  PageTraceSource src(std::make_unique<VectorSource>(meta_of(2, 5), recs), 4);
  CHECK(src.meta().top_k == 3);  // the widest list: layer 1 of step 0
  CHECK(src.meta().layers == 2);
  CHECK(src.meta().source == "mem (pages of 4 tokens)");
  const auto out = testing::read_all(src);
  REQUIRE(out.size() == 3);
  CHECK(out[0].request_id == 7);
  CHECK(out[0].seq_len == 5);  // ceil(18 / 4)
  CHECK(out[0].positions == std::vector<int32_t>{0, 2, -1, 1, 2, 4});
  CHECK(out[1].seq_len == 5);  // ceil(19 / 4): token 18 is in page 4, the newest page
  CHECK(out[1].positions == std::vector<int32_t>{-1, -1, -1, 4, -1, -1});
  CHECK(out[2].request_id == 9);
  CHECK(out[2].seq_len == 2);
  CHECK(out[2].positions == std::vector<int32_t>{0, 1, -1, -1, -1, -1});
  // The width pass rewound the inner source; seeking works through the adapter.
  src.seek_request(9);
  StepRecord r;
  REQUIRE(src.next(r));
  CHECK(r.request_id == 9);
  CHECK(src.request_ids() == std::vector<int64_t>{7, 9});
}

TEST_CASE("a page replay counted by hand: misses x P x row bytes") {
  // P = 4, H = 3 pages, empty initial state, one layer, width 3.
  // step 0, n = 20 (pages 0..4, newest 4): tokens {0, 1, 5, 9, 10} -> pages {0, 1, 2}: 3 misses into slots 0, 1, 2.
  // step 1, n = 21 (newest page 5): {2, 13, 20} -> {0, 3, 5}: page 5 newest, page 0 a hit, page 3 a miss that evicts
  //   the least recently used non-hit slot (slot 1, page 1); lru becomes [2, 1, 0].
  // step 2, n = 22: {4, 6, 7} -> {1}: page 1 left at step 1, a miss evicting slot 2.  Total 5 misses.
  std::vector<StepRecord> recs = {
      record(0, 0, 20, {0, 1, 5, 9, 10}),
      record(0, 1, 21, {2, 13, 20, -1, -1}),
      record(0, 2, 22, {4, 6, 7, -1, -1}),
  };
  PageTraceSource src(std::make_unique<VectorSource>(meta_of(1, 5, InitialState::kEmpty), recs), 4);
  REQUIRE(src.meta().top_k == 3);
  sim::ReplayOptions ro;
  ro.policies = {"sglang-lru"};
  ro.buffer_sizes = {3};
  ro.row_bytes = 4 * 100;  // a page of 4 rows of 100 bytes
  ro.keep_step_rows = true;
  std::vector<int32_t> per_step;
  const sim::ReplayResult res = sim::run_replay(src, ro, [&](const sim::ReplayRequestRows& rows) {
    for (const auto& row : rows.rows[0][0]) per_step.push_back(row.misses);
  });
  CHECK(per_step == std::vector<int32_t>{3, 1, 1});
  REQUIRE(res.configs.size() == 1);
  CHECK(res.configs[0].misses == 5);
  CHECK(res.configs[0].newest_hits == 1);
  CHECK(res.configs[0].h2d_bytes == 5 * 4 * 100);
  CHECK(res.configs[0].selected == 3 + 3 + 1);
}

TEST_CASE("round trips: random page sets -> all their tokens -> the same pages; a page trace written natively reads back") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t P = 1 + static_cast<int32_t>(rng() % 9), n = 1 + static_cast<int32_t>(rng() % 200);
    const int32_t np = pages_of(n, P), L = 1 + static_cast<int32_t>(rng() % 3);
    std::vector<std::set<int32_t>> want(static_cast<size_t>(L));
    for (auto& s : want)
      for (int32_t i = 0; i < 1 + static_cast<int32_t>(rng() % 6); ++i) s.insert(static_cast<int32_t>(rng() % np));
    // Every token of the chosen pages, listed page by page in descending page order (order must not matter).
    int32_t K = 0;
    std::vector<std::vector<int32_t>> tok(static_cast<size_t>(L));
    for (int32_t l = 0; l < L; ++l) {
      for (auto it = want[l].rbegin(); it != want[l].rend(); ++it)
        for (int32_t j = *it * P; j < std::min(n, (*it + 1) * P); ++j) tok[l].push_back(j);
      K = std::max(K, static_cast<int32_t>(tok[l].size()));
    }
    StepRecord rec = record(3, 0, n, std::vector<int32_t>(static_cast<size_t>(L) * K, -1));
    for (int32_t l = 0; l < L; ++l) std::copy(tok[l].begin(), tok[l].end(), rec.positions.begin() + static_cast<std::ptrdiff_t>(l) * K);
    PageTraceSource src(std::make_unique<VectorSource>(meta_of(L, K), std::vector<StepRecord>{rec}), P);
    const auto out = testing::read_all(src);
    REQUIRE(out.size() == 1);
    const int32_t W = src.meta().top_k;
    for (int32_t l = 0; l < L; ++l) {
      std::vector<int32_t> got;
      for (int32_t i = 0; i < W; ++i)
        if (out[0].layer(l, W)[i] >= 0) got.push_back(out[0].layer(l, W)[i]);
      CHECK(got == std::vector<int32_t>(want[l].begin(), want[l].end()));
    }
  }

  std::vector<StepRecord> recs = {record(0, 0, 40, {3, 35, 17, -1}), record(0, 1, 41, {40, 0, 1, 2})};
  PageTraceSource src(std::make_unique<VectorSource>(meta_of(1, 4), recs), 8);
  const std::string path = testing::scratch_dir("page_trace") + "/pages.hstr";
  auto w = make_native_writer(path, src.meta());
  const auto pages = testing::read_all(src);
  for (const auto& r : pages) w->write(r);
  w->finish();
  auto back = open_trace(path);
  CHECK(back->meta().top_k == 3);
  const auto again = testing::read_all(*back);
  REQUIRE(again.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(again[i].seq_len == pages[i].seq_len);
    CHECK(again[i].positions == pages[i].positions);
  }
  CHECK(pages[0].positions == std::vector<int32_t>{0, 2, 4});
  CHECK(pages[1].positions == std::vector<int32_t>{0, 5, -1});
}

TEST_CASE("page lists equal a set of token / P for every list layout: sorted (the fast path), padded, shuffled") {
  // Sorted lists take a linear walk and the rest a sort; both must give the distinct pages, ascending, then padding.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int32_t P = 1 + static_cast<int32_t>(rng() % 70), n = 1 + static_cast<int32_t>(rng() % 5000);
    const int32_t K = 1 + static_cast<int32_t>(rng() % 64), L = 1 + static_cast<int32_t>(rng() % 3);
    const int layout = trial % 4;  // sorted + trailing -1, sorted + -1 inside, shuffled, sorted + leading -1
    StepRecord rec = record(1, 0, n, std::vector<int32_t>(static_cast<size_t>(L) * K, -1));
    std::vector<std::set<int32_t>> want(static_cast<size_t>(L));
    for (int32_t l = 0; l < L; ++l) {
      std::set<int32_t> tokens;
      const int32_t count = static_cast<int32_t>(rng() % static_cast<uint32_t>(std::min(K, n) + 1));
      while (static_cast<int32_t>(tokens.size()) < count) tokens.insert(static_cast<int32_t>(rng() % n));
      std::vector<int32_t> list(tokens.begin(), tokens.end());
      for (int32_t t : list) want[l].insert(t / P);
      list.resize(static_cast<size_t>(K), -1);
      if (layout == 1 && count < K) std::rotate(list.begin(), list.begin() + count / 2, list.begin() + count + 1);
      if (layout == 2) std::shuffle(list.begin(), list.end(), rng);
      if (layout == 3) std::rotate(list.begin(), list.begin() + count, list.end());
      std::copy(list.begin(), list.end(), rec.positions.begin() + static_cast<std::ptrdiff_t>(l) * K);
    }
    PageTraceSource src(std::make_unique<VectorSource>(meta_of(L, K), std::vector<StepRecord>{rec}), P);
    const auto out = testing::read_all(src);
    REQUIRE(out.size() == 1);
    const int32_t W = src.meta().top_k;
    size_t widest = 1;
    for (int32_t l = 0; l < L; ++l) {
      CAPTURE(trial);
      CAPTURE(l);
      const int32_t* row = out[0].layer(l, W);
      const std::vector<int32_t> expect(want[l].begin(), want[l].end());
      CHECK(std::vector<int32_t>(row, row + expect.size()) == expect);
      CHECK(std::all_of(row + expect.size(), row + W, [](int32_t v) { return v == -1; }));
      widest = std::max(widest, expect.size());
    }
    CHECK(W == static_cast<int32_t>(widest));
  }
}

TEST_CASE("a bad page size or a list wider than the page width is refused, naming what and where") {
  std::vector<StepRecord> recs = {record(4, 0, 30, {0, 10, 20})};
  for (int32_t bad : {0, -3, (1 << 20) + 1}) {
    const std::string e =
        error_of([&] { PageTraceSource(std::make_unique<VectorSource>(meta_of(1, 3), recs), bad); });
    INFO(e);
    CHECK(e.find("page size " + std::to_string(bad)) != std::string::npos);
    CHECK(e.find("outside [1, 1048576]") != std::string::npos);
  }
  CHECK(error_of([&] { check_page_size(0, "replay: --page-size"); }).find("replay: --page-size") == 0);
  PageTraceSource narrow(std::make_unique<VectorSource>(meta_of(1, 3), recs), 4, 2);  // tokens 0, 10, 20: 3 pages
  StepRecord r;
  const std::string e = error_of([&] { narrow.next(r); });
  CHECK(e.find("request 4, step 0, layer 0") != std::string::npos);
  CHECK(e.find("touches 3 pages of 4 tokens, more than the page width 2") != std::string::npos);
}

}  // namespace
}  // namespace hisparse::traces
