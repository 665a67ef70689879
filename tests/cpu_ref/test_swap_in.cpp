// @brief Golden examples of docs/swap_in.md, the fast/slow path switch, errors, a random comparison against a
// literal transcription of the contract, and the scratch's memory at the longest context.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/swap_in.h"
#include "tests/cpu_ref/swap_in_naive.h"
#include "traces/trace_limits.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

namespace {

struct State {
  std::vector<int32_t> slot_token, lru;
  explicit State(int32_t H) : slot_token(H), lru(H) {}
  SwapInStateView view() { return {slot_token.data(), lru.data(), static_cast<int32_t>(lru.size())}; }
};

std::vector<int32_t> rows_of(const SwapInPlan& p, const std::vector<int32_t>& slot_rows) {
  std::vector<int32_t> rows;
  for (int32_t s : p.slot_of) rows.push_back(s < 0 ? -1 : slot_rows[s]);
  return rows;
}

void run(State& st, std::vector<int32_t> T, int32_t n, int32_t K, SwapInPlan& plan, int64_t row_bytes = 1152) {
  swap_in(st.view(), T.data(), static_cast<int32_t>(T.size()), n, K, nullptr, row_bytes, {7, 3, 11}, plan);
}

// Host rows: token t lives at host row 100 + t.
std::vector<int64_t> host_rows(int32_t n) {
  std::vector<int64_t> h(n);
  for (int32_t t = 0; t < n; ++t) h[t] = 100 + t;
  return h;
}

// The first state of the worked examples: H = 4, slot rows [9,7,3,5] + reserved 11, n = 8.
State example_state() {
  State st(4);
  st.slot_token = {1, 4, 2, 5};
  st.lru = {0, 1, 2, 3};
  return st;
}
const std::vector<int32_t> kRows = {9, 7, 3, 5, 11};

}  // namespace

TEST_CASE("swap-in golden: hits and the newest token, then one miss into the LRU head") {
  State st = example_state();
  SwapInPlan plan;
  const auto host = host_rows(8);
  std::vector<int32_t> T = {4, 2, 7};
  swap_in(st.view(), T.data(), 3, 8, 4, host.data(), 1152, {}, plan);
  // Expected: rows [7, 3, 11]; slot_token unchanged; lru [0, 3, 1, 2]; no loads.
  CHECK(rows_of(plan, kRows) == std::vector<int32_t>{7, 3, 11});
  CHECK(st.slot_token == std::vector<int32_t>{1, 4, 2, 5});
  CHECK(st.lru == std::vector<int32_t>{0, 3, 1, 2});
  CHECK(plan.load_host.empty());
  CHECK(plan.counters.hits == 2);
  CHECK(plan.counters.newest_hits == 1);
  CHECK(plan.counters.misses == 0);
  CHECK_FALSE(plan.counters.fast_path);

  T = {6};
  swap_in(st.view(), T.data(), 1, 8, 4, host.data(), 1152, {}, plan);
  // Expected: rows [9] (slot 0); slot_token [6, 4, 2, 5]; lru [3, 1, 2, 0]; load host row of 6 -> device row 9.
  CHECK(rows_of(plan, kRows) == std::vector<int32_t>{9});
  CHECK(st.slot_token == std::vector<int32_t>{6, 4, 2, 5});
  CHECK(st.lru == std::vector<int32_t>{3, 1, 2, 0});
  REQUIRE(plan.load_host.size() == 1);
  CHECK(plan.load_host[0] == 106);
  CHECK(kRows[plan.load_slot[0]] == 9);
  CHECK(plan.counters.misses == 1);
  CHECK(plan.counters.h2d_bytes == 1152);
  CHECK(plan.counters.selected == 1);
}

TEST_CASE("swap-in golden: hit, miss and newest in one step") {
  State st = example_state();
  SwapInPlan plan;
  // Expected: rows [7, 9, 11]; lru [2, 3, 0, 1]; slot_token [6, 4, 2, 5].
  run(st, {4, 6, 7}, 8, 4, plan);
  CHECK(rows_of(plan, kRows) == std::vector<int32_t>{7, 9, 11});
  CHECK(st.lru == std::vector<int32_t>{2, 3, 0, 1});
  CHECK(st.slot_token == std::vector<int32_t>{6, 4, 2, 5});
  CHECK(plan.load_host == std::vector<int64_t>{6});
  CHECK(plan.counters.hits == 1);
  CHECK(plan.counters.newest_hits == 1);
  CHECK(plan.counters.misses == 1);
}

TEST_CASE("swap-in golden: fast path") {
  // n = 3, slot rows [13, 9, 5, 1], reserved 15: T = [2, 0, 1] -> rows [5, 13, 9]; nothing changes.
  State st(4);
  init_swap_in_state(st.view(), InitialState::kIdentity);
  const auto before = st.slot_token;
  SwapInPlan plan;
  run(st, {2, 0, 1}, 3, 4, plan);
  CHECK(rows_of(plan, {13, 9, 5, 1, 15}) == std::vector<int32_t>{5, 13, 9});
  CHECK(st.slot_token == before);
  CHECK(st.lru == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(plan.counters.fast_path);
  CHECK(plan.counters.newest_hits == 1);  // token 2 = n-1
  CHECK(plan.counters.hits == 2);
  CHECK(plan.counters.misses == 0);
  CHECK(plan.load_slot.empty());
}

TEST_CASE("swap-in: identity switches to the slow path exactly at n = H + 1; empty misses everything") {
  State st(4);
  init_swap_in_state(st.view(), InitialState::kIdentity);
  SwapInPlan plan;
  run(st, {0, 3, 1}, 4, 4, plan);  // n = H: still fast
  CHECK(plan.counters.fast_path);
  run(st, {0, 3, 4, -1}, 5, 4, plan);  // n = H + 1: slow; 0 and 3 hit, 4 is newest
  CHECK_FALSE(plan.counters.fast_path);
  CHECK(plan.slot_of == std::vector<int32_t>{0, 3, 4, -1});
  CHECK(plan.counters.selected == 3);
  CHECK(plan.counters.hits == 2);
  CHECK(plan.counters.newest_hits == 1);
  CHECK(st.lru == std::vector<int32_t>{1, 2, 0, 3});

  State e(4);
  init_swap_in_state(e.view(), InitialState::kEmpty);
  CHECK(e.slot_token == std::vector<int32_t>{-1, -1, -1, -1});
  run(e, {9, 2, 5}, 11, 4, plan);  // all three miss (newest is 10), into slots 0, 1, 2
  CHECK(plan.counters.misses == 3);
  CHECK(plan.load_slot == std::vector<int32_t>{0, 1, 2});
  CHECK(e.slot_token == std::vector<int32_t>{9, 2, 5, -1});
  CHECK(e.lru == std::vector<int32_t>{3, 0, 1, 2});
}

TEST_CASE("swap-in: invalid input names request, layer, step and value, and leaves the state untouched") {
  const auto expect_error = [](std::vector<int32_t> T, int32_t n, int32_t K, const std::vector<int64_t>* host,
                               const std::string& needle) {
    State st = example_state();
    const State before = st;
    SwapInPlan plan;
    std::string message;
    try {
      swap_in(st.view(), T.data(), static_cast<int32_t>(T.size()), n, K, host ? host->data() : nullptr, 1152,
              {7, 3, 11}, plan);
    } catch (const Error& e) {
      message = e.what();
    }
    INFO("message: " << message);
    CHECK(message.find(needle) != std::string::npos);
    CHECK(message.find("request 7") != std::string::npos);
    CHECK(message.find("layer 3") != std::string::npos);
    CHECK(message.find("step 11") != std::string::npos);
    CHECK(st.slot_token == before.slot_token);
    CHECK(st.lru == before.lru);
  };
  expect_error({4, 6, 4}, 8, 4, nullptr, "position 4 is selected twice");
  expect_error({4, 8}, 8, 4, nullptr, "position 8");
  expect_error({4, 6, 1, 0, 3}, 8, 4, nullptr, "5 entries selected, expected at most top_k = 4");
  expect_error({4, -3}, 8, 4, nullptr, "entry 1 is -3");
  // 6 misses; its host copy is missing. 0 misses too, and it comes first with a valid copy: still nothing moves.
  std::vector<int64_t> host = host_rows(8);
  host[6] = -1;
  expect_error({0, 6}, 8, 4, &host, "token 6 of request 7, layer 3 has no host copy");
  // H < K is a configuration error.
  expect_error({4}, 8, 5, nullptr, "must be >= top_k");
}

TEST_CASE("swap-in: a slot holding the newest token (n did not grow) joins HITS; the entry keeps slot H") {
  State st = example_state();  // slot 3 holds 5
  SwapInPlan plan;
  run(st, {5, 1}, 6, 4, plan);  // n = 6: newest is 5, held by slot 3
  CHECK(plan.slot_of == std::vector<int32_t>{4, 0});
  CHECK(plan.counters.newest_hits == 1);
  CHECK(plan.counters.hits == 1);
  CHECK(st.lru == std::vector<int32_t>{1, 2, 0, 3});
}

TEST_CASE("swap-in equals a literal transcription of the contract on random steps") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    INFO("seed " << seed);
    const int32_t H = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t K = 1 + static_cast<int32_t>(rng() % H);
    const bool identity = rng() % 2;
    State st(H);
    init_swap_in_state(st.view(), identity ? InitialState::kIdentity : InitialState::kEmpty);
    std::vector<int32_t> ref_tokens = st.slot_token, ref_lru = st.lru;
    int32_t n = identity ? 1 + static_cast<int32_t>(rng() % (H + 2)) : H + 1 + static_cast<int32_t>(rng() % 8);
    SwapInPlan plan;
    for (int step = 0; step < 60; ++step) {
      // Draw up to K distinct positions below n, biased to recent ones and to the previous selection.
      std::vector<int32_t> T;
      const int32_t want = static_cast<int32_t>(rng() % (K + 1));
      std::vector<char> used(n, 0);
      for (int tries = 0; static_cast<int32_t>(T.size()) < want && tries < 4 * want; ++tries) {
        const int32_t span = std::min<int32_t>(n, 3 * H / 2 + 1);
        const int32_t t = n - 1 - static_cast<int32_t>(rng() % span);
        if (!used[t]) { used[t] = 1; T.push_back(t); }
      }
      if (rng() % 3 == 0) T.push_back(-1);
      if (static_cast<int32_t>(T.size()) > K) T.resize(K);
      swap_in(st.view(), T.data(), static_cast<int32_t>(T.size()), n, K, nullptr, 64, {}, plan);
      const test::NaiveStep ref = test::naive_swap_in(ref_tokens, ref_lru, T, n);
      REQUIRE(plan.slot_of == ref.slot_of);
      REQUIRE(plan.load_host == ref.load_host);
      REQUIRE(plan.load_slot == ref.load_slot);
      REQUIRE(st.slot_token == ref_tokens);
      REQUIRE(st.lru == ref_lru);
      CHECK(plan.counters.hits == ref.hits);
      CHECK(plan.counters.newest_hits == ref.newest_hits);
      CHECK(plan.counters.misses == ref.misses);
      CHECK(plan.counters.selected == plan.counters.hits + plan.counters.newest_hits + plan.counters.misses);
      CHECK(plan.counters.h2d_bytes == 64 * plan.counters.misses);
      n += 1;
    }
  }
}

TEST_CASE("swap-in at n = kMaxSeqLen: scratch memory is O(K + H), not O(n), and the result is the contract's") {
  // Issue 17: the scratch used to be indexed by position (8 bytes x n per worker). A step touches K + H positions.
  const int32_t n0 = traces::kMaxSeqLen - 100;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    INFO("seed " << seed);
    const int32_t H = 8 + static_cast<int32_t>(rng() % 24);
    const int32_t K = 1 + static_cast<int32_t>(rng() % H);
    State st(H);
    init_swap_in_state(st.view(), seed % 2 ? InitialState::kIdentity : InitialState::kEmpty);
    std::vector<int32_t> ref_tokens = st.slot_token, ref_lru = st.lru;
    SwapInScratch scratch;
    SwapInPlan plan;
    int32_t n = n0;
    for (int step = 0; step < 60; ++step, ++n) {
      // Up to K distinct positions: half near the newest token, half anywhere below n (0 and n - 1 included).
      std::set<int32_t> used;
      std::vector<int32_t> T;
      const int32_t want = static_cast<int32_t>(rng() % (K + 1));
      for (int tries = 0; static_cast<int32_t>(T.size()) < want && tries < 4 * want; ++tries) {
        const int32_t t = rng() % 2 ? n - 1 - static_cast<int32_t>(rng() % (2 * H)) : static_cast<int32_t>(rng() % n);
        if (used.insert(t).second) T.push_back(t);
      }
      if (rng() % 3 == 0 && static_cast<int32_t>(T.size()) < K) T.push_back(-1);
      swap_in(st.view(), T.data(), static_cast<int32_t>(T.size()), n, K, nullptr, 64, {}, plan, scratch);
      REQUIRE_FALSE(scratch.direct());
      const test::NaiveStep ref = test::naive_swap_in(ref_tokens, ref_lru, T, n);
      REQUIRE(plan.slot_of == ref.slot_of);
      REQUIRE(plan.load_slot == ref.load_slot);
      REQUIRE(st.slot_token == ref_tokens);
      REQUIRE(st.lru == ref_lru);
      CHECK(plan.counters.misses == ref.misses);
    }
    // Hashed table: 4..8 cells of 8 bytes per entry plus one overflow cell; per-slot arrays: 5 x H words.
    CHECK(scratch.bytes() <= 128 * static_cast<size_t>(K + H) + 1024);
  }
}

TEST_CASE("swap-in scratch: direct table up to kDirectSpan x (K + H) positions, hashed beyond, bytes bounded") {
  const int32_t H = 16, K = 8;
  const int32_t span = SwapInScratch::kDirectSpan * (K + H);
  auto step_at = [&](SwapInScratch& scratch, int32_t n) {
    State st(H);
    init_swap_in_state(st.view(), InitialState::kEmpty);
    SwapInPlan plan;
    std::vector<int32_t> T;
    for (int32_t i = 0; i < K; ++i) T.push_back(n - 1 - 2 * i);
    swap_in(st.view(), T.data(), K, n, K, nullptr, 64, {}, plan, scratch);
    CHECK(plan.counters.misses == K - 1);  // every entry but the newest token
  };
  SwapInScratch direct, hashed;
  step_at(direct, span);
  CHECK(direct.direct());
  CHECK(direct.bytes() <= 8 * static_cast<size_t>(span + 1) + 64 * static_cast<size_t>(K + H));
  step_at(hashed, traces::kMaxSeqLen);
  CHECK_FALSE(hashed.direct());
  CHECK(hashed.bytes() < 2048);  // vs 8 x 2^24 bytes when the table was indexed by position
  // One scratch serving both (a worker replaying several buffer sizes) holds at most the sum.
  step_at(direct, traces::kMaxSeqLen);
  CHECK_FALSE(direct.direct());
  CHECK(direct.bytes() <= 8 * static_cast<size_t>(span + 1) + 64 * static_cast<size_t>(K + H) + 2048);

  // Duplicates and out-of-range entries are still found by the hashed table, with the same messages.
  State st(H);
  SwapInPlan plan;
  const int32_t n = traces::kMaxSeqLen;
  std::vector<int32_t> T = {n - 1, 0, n - 2, 0};
  CHECK_THROWS_WITH_AS(run(st, T, n, K, plan), doctest::Contains("position 0 is selected twice (entries 1 and 3)"),
                       Error);
  T = {n - 1, 0, n};
  CHECK_THROWS_WITH_AS(run(st, T, n, K, plan), doctest::Contains("position 16777216 (entry 2) is >= sequence length"),
                       Error);
  T = {n - 1, 0, n - 2};
  run(st, T, n, K, plan);  // a step after a rejected one starts clean
  CHECK(plan.counters.selected == 3);
}

TEST_CASE("swap-in: the direct and the hashed table give the same plans (random steps, literal contract)") {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    INFO("seed " << seed);
    const int32_t H = 1 + static_cast<int32_t>(rng() % 40);
    const int32_t K = 1 + static_cast<int32_t>(rng() % H);
    State a(H), b(H);
    const InitialState init = rng() % 2 ? InitialState::kIdentity : InitialState::kEmpty;
    init_swap_in_state(a.view(), init);
    init_swap_in_state(b.view(), init);
    std::vector<int32_t> ref_tokens = a.slot_token, ref_lru = a.lru;
    SwapInScratch direct(1 << 20), hashed(0);  // a span no n here reaches: always direct; 0: always hashed
    SwapInPlan pa, pb;
    int32_t n = H + 1 + static_cast<int32_t>(rng() % 8);
    for (int step = 0; step < 60; ++step, n += static_cast<int32_t>(rng() % 3)) {  // n may stay: newest in a slot
      std::set<int32_t> used;
      std::vector<int32_t> T;
      const int32_t want = static_cast<int32_t>(rng() % (K + 1));
      for (int tries = 0; static_cast<int32_t>(T.size()) < want && tries < 4 * want; ++tries) {
        const int32_t t = n - 1 - static_cast<int32_t>(rng() % std::min<int32_t>(n, 3 * H / 2 + 1));
        if (used.insert(t).second) T.push_back(t);
      }
      if (rng() % 3 == 0 && static_cast<int32_t>(T.size()) < K) T.insert(T.begin() + rng() % (T.size() + 1), -1);
      swap_in(a.view(), T.data(), static_cast<int32_t>(T.size()), n, K, nullptr, 64, {}, pa, direct);
      swap_in(b.view(), T.data(), static_cast<int32_t>(T.size()), n, K, nullptr, 64, {}, pb, hashed);
      REQUIRE(direct.direct());
      REQUIRE_FALSE(hashed.direct());
      const test::NaiveStep ref = test::naive_swap_in(ref_tokens, ref_lru, T, n);
      REQUIRE(pa.slot_of == ref.slot_of);
      REQUIRE(pb.slot_of == ref.slot_of);
      REQUIRE(pb.load_slot == pa.load_slot);
      REQUIRE(pb.load_host == pa.load_host);
      REQUIRE(b.slot_token == a.slot_token);
      REQUIRE(b.lru == a.lru);
      REQUIRE(a.lru == ref_lru);
      CHECK(pb.counters.hits == pa.counters.hits);
      CHECK(pb.counters.newest_hits == pa.counters.newest_hits);
    }
  }
}
