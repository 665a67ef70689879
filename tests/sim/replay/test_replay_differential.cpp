// @brief Differential tests of the replay engine against the reference contract: a replay written the plainest way
// (every request, layer and configuration on its own state: sglang-lru through cpu_ref::swap_in with the preload rule
// written out, the other policies through their cpu_ref/policies objects with the request's whole future) must give
// the engine's every per-step row, histogram and total, on random traces built for the edge cases (n == H and
// n == H + 1, n that does not grow, H == top_k, the newest token selected, rows of padding only, lists shorter than
// top_k, identity and empty states, several requests) and on generated ones (shuffled, padded, long contexts that take
// the reference's hashed table), every policy, 1 and 3 threads, small and large windows, the counting sglang-lru and
// its cpu_ref policy object; the counting sglang-lru against cpu_ref::swap_in step by step (scalar and AVX2 walks);
// and belady's bounded look-ahead.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in.h"
#include "sim/replay/lru_counter.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "tests/sim/replay/plain_replay.h"
#include "tests/sim/vector_trace_source.h"
#include "traces/trace_generator.h"

using namespace hisparse;

namespace {

struct Trace {
  traces::TraceMeta meta;
  std::vector<traces::StepRecord> recs;  // grouped by request
};

struct Case {
  std::string name;
  Trace trace;
  std::vector<int32_t> sizes;
};

Trace generated(const std::string& name, const traces::GeneratorOptions& g, bool pad) {
  auto gen = traces::make_generated_trace(g);
  Trace t;
  traces::StepRecord r;
  std::mt19937 rng(7);
  while (gen->next(r)) {
    if (pad)
      for (auto& p : r.positions)
        if (rng() % 9 == 0) p = -1;
    t.recs.push_back(r);
  }
  t.meta = gen->meta();
  t.meta.source = "generated:" + name;
  return t;
}

/// Random lists aimed at the contract's edges: n starts at n0 (pick it at H to cross n == H, H + 1) and grows by 0, 1
/// or 2 per step (a step that does not grow leaves the newest token in a slot), entries mostly among the recent
/// positions (hits), the newest one often, sometimes a whole layer of padding, padding anywhere, and while n < top_k
/// the list is shorter than top_k (padded).
Trace random_trace(uint64_t seed, int32_t layers, int32_t K, int32_t requests, int32_t steps, int32_t n0,
                   InitialState initial) {
  std::mt19937_64 rng(seed);
  Trace t;
  t.meta.layers = layers;
  t.meta.top_k = K;
  t.meta.initial_state = initial;
  t.meta.source = "random:" + std::to_string(seed);
  for (int32_t q = 0; q < requests; ++q) {
    int32_t n = std::max(1, n0 + static_cast<int32_t>(rng() % 3) - 1);
    for (int32_t s = 0; s < steps; ++s) {
      traces::StepRecord r;
      r.request_id = 100 + q;
      r.step = s;
      r.seq_len = n;
      r.positions.assign(static_cast<size_t>(layers) * K, -1);
      for (int32_t l = 0; l < layers; ++l) {
        if (rng() % 13 == 0) continue;  // a layer of padding only
        std::vector<char> used(static_cast<size_t>(n), 0);
        int32_t* row = r.positions.data() + static_cast<size_t>(l) * K;
        const int32_t count = std::min(K, n);
        int32_t i = 0;
        if (rng() % 2) {
          row[i++] = n - 1;  // the newest token (a newest hit)
          used[static_cast<size_t>(n - 1)] = 1;
        }
        const int32_t recent = std::min(n, 2 * K);
        while (i < count) {
          const int32_t p = rng() % 5 ? n - 1 - static_cast<int32_t>(rng() % static_cast<uint64_t>(recent))
                                      : static_cast<int32_t>(rng() % static_cast<uint64_t>(n));
          if (used[static_cast<size_t>(p)]) continue;
          used[static_cast<size_t>(p)] = 1;
          row[i++] = p;
        }
        if (rng() % 4 == 0) row[rng() % static_cast<uint64_t>(K)] = -1;
        std::shuffle(row, row + K, rng);
      }
      t.recs.push_back(std::move(r));
      n += static_cast<int32_t>(rng() % 3);
    }
  }
  return t;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"random-identity", random_trace(1, 3, 8, 3, 40, 16, InitialState::kIdentity), {8, 9, 16, 17}});
  out.push_back({"random-empty", random_trace(2, 2, 8, 4, 40, 15, InitialState::kEmpty), {8, 12, 16}});
  out.push_back({"random-short-lists", random_trace(3, 2, 16, 2, 30, 3, InitialState::kEmpty), {16, 20}});
  out.push_back({"random-k1", random_trace(4, 2, 1, 3, 30, 2, InitialState::kIdentity), {1, 2, 3}});
  {
    traces::GeneratorOptions g = traces::generator_preset("tiny");
    g.requests = 3;
    g.steps = 25;
    g.prompt_len = 30;  // crosses n = H + 1: fast path first
    out.push_back({"tiny-identity", generated("tiny-identity", g, false), {16, 17, 24, 48}});
  }
  {
    traces::GeneratorOptions g = traces::generator_preset("tiny");
    g.requests = 4;
    g.steps = 18;
    g.prompt_len = 12;  // first steps n <= H: an empty request preloaded
    g.initial_state = InitialState::kEmpty;
    g.shuffle = true;
    g.seed = 5;
    out.push_back({"tiny-empty-shuffled-padded", generated("tiny-empty-shuffled-padded", g, true), {16, 20, 40}});
  }
  {
    // n far beyond 256 x (K + H): the counting form's bitmaps are not used, steps go through cpu_ref::swap_in's
    // hashed table.
    traces::GeneratorOptions g = traces::generator_preset("tiny");
    g.requests = 2;
    g.steps = 10;
    g.prompt_len = 200000;
    g.top_k = 16;
    g.seed = 13;
    out.push_back({"hashed-n", generated("hashed-n", g, false), {16, 32}});
  }
  {
    traces::GeneratorOptions g = traces::generator_preset("default");
    g.requests = 2;
    g.steps = 30;
    g.layers = 8;
    g.top_k = 64;
    g.prompt_len = 300;
    g.recent_window = 8;
    g.topic_width = 40;
    g.seed = 21;
    out.push_back({"k64-8layers", generated("k64-8layers", g, false), {64, 96, 128}});
  }
  return out;
}

using replay_test::ReplayRun;
using Captured = ReplayRun;

/// The reference replay (tests/sim/replay/plain_replay.h).
Captured reference_replay(const Trace& t, const std::vector<std::string>& policies, const std::vector<int32_t>& sizes,
                          int64_t row_bytes) {
  return replay_test::plain_replay(t.meta, t.recs, policies, sizes, row_bytes);
}

Captured engine_replay(const Trace& t, const sim::ReplayOptions& o) {
  VectorSource src(t.meta, t.recs);
  Captured out;
  out.result = sim::run_replay(src, o, [&](const sim::ReplayRequestRows& r) { out.rows.push_back(r); });
  return out;
}

void check_same(const Captured& a, const Captured& b) {
  const std::string none = "null";
  CHECK(sim::replay_json(a.result, 100, none) == sim::replay_json(b.result, 100, none));
  CHECK(sim::replay_csv(a.result) == sim::replay_csv(b.result));
  CHECK(a.result.step_seq_lens == b.result.step_seq_lens);
  REQUIRE(a.result.configs.size() == b.result.configs.size());
  for (size_t c = 0; c < a.result.configs.size(); ++c) {
    CHECK(a.result.configs[c].miss_hist == b.result.configs[c].miss_hist);
    CHECK(a.result.configs[c].step_miss_hist == b.result.configs[c].step_miss_hist);
  }
  REQUIRE(a.rows.size() == b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(a.rows[i].request_id == b.rows[i].request_id);
    CHECK(a.rows[i].steps == b.rows[i].steps);
    REQUIRE(a.rows[i].rows.size() == b.rows[i].rows.size());
    for (size_t c = 0; c < a.rows[i].rows.size(); ++c)
      for (size_t l = 0; l < a.rows[i].rows[c].size(); ++l) {
        const auto& x = a.rows[i].rows[c][l];
        const auto& y = b.rows[i].rows[c][l];
        REQUIRE(x.size() == y.size());
        for (size_t j = 0; j < x.size(); ++j) {
          INFO("request " << a.rows[i].request_id << " config " << c << " layer " << l << " step " << j);
          CHECK(x[j].seq_len == y[j].seq_len);
          CHECK(x[j].selected == y[j].selected);
          CHECK(x[j].hits == y[j].hits);
          CHECK(x[j].newest_hits == y[j].newest_hits);
          CHECK(x[j].misses == y[j].misses);
        }
      }
  }
}

const std::vector<std::string> kAllPolicies = {"sglang-lru", "belady", "fifo", "lfu", "clock", "topk-only"};

}  // namespace

TEST_CASE("differential: run_replay (the one driver) == the contract replayed plainly, every policy and edge") {
  for (const Case& c : cases()) {
    MESSAGE("expected: the engine's rows, histograms and totals equal the plain reference replay's for " << c.name);
    const Captured ref = reference_replay(c.trace, kAllPolicies, c.sizes, 100);
    // The traces must reach both paths and cost misses, else equality proves little.
    int64_t misses = 0, fast = 0;
    for (const auto& s : ref.result.configs) {
      misses += s.misses;
      fast += s.fast_path_step_layers;
    }
    CHECK(misses > 0);
    CHECK(fast < ref.result.configs.front().step_layers * static_cast<int64_t>(ref.result.configs.size()));
    sim::ReplayOptions o;
    o.policies = kAllPolicies;
    o.buffer_sizes = c.sizes;
    o.row_bytes = 100;
    o.keep_step_rows = true;
    for (int threads : {1, 3}) {
      for (size_t batch : {size_t{1}, size_t{64} << 20}) {
        for (bool reference : {false, true}) {
          INFO(c.name << ", " << threads << " threads, batch " << batch << ", reference lru " << reference);
          o.threads = threads;
          o.batch_bytes = batch;
          o.reference_lru = reference;
          const Captured now = engine_replay(c.trace, o);
          check_same(ref, now);
          CHECK(now.result.lookahead_cut_requests == 0);
          CHECK(now.result.lookahead_steps > 0);
        }
      }
    }
    // Online policies alone: the driver without its look-ahead stage (no window).
    const std::vector<std::string> online = {"sglang-lru", "fifo", "lfu", "clock", "topk-only"};
    const Captured ref_online = reference_replay(c.trace, online, c.sizes, 100);
    o.policies = online;
    o.reference_lru = false;
    for (int threads : {1, 3}) {
      for (size_t batch : {size_t{1}, size_t{64} << 20}) {
        INFO(c.name << ", online policies through the driver, " << threads << " threads, batch " << batch);
        o.threads = threads;
        o.batch_bytes = batch;
        const Captured now = engine_replay(c.trace, o);
        check_same(ref_online, now);
        CHECK(now.result.lookahead_steps == 0);
      }
    }
  }
}

TEST_CASE("differential: the engine's errors are the contract's (request, layer, step named)") {
  traces::TraceMeta meta;
  meta.layers = 3;
  meta.top_k = 2;
  meta.source = "hand-made";
  for (int bad : {0, 1, 2}) {
    std::vector<traces::StepRecord> recs;
    for (int64_t s = 0; s < 4; ++s) {
      traces::StepRecord r;
      r.request_id = 5;
      r.step = s;
      r.seq_len = static_cast<int32_t>(10 + s);
      r.positions = {0, 1, 2, 3, 4, 5};
      if (s == 2) {
        if (bad == 0) r.positions[2] = r.positions[3] = 7;  // duplicate in layer 1
        if (bad == 1) r.positions[3] = 12;                  // >= seq_len 12
        if (bad == 2) r.positions[3] = -3;                  // negative, not padding
      }
      recs.push_back(r);
    }
    MESSAGE("expected: bad case " << bad << " fails in the engine with cpu_ref::swap_in's own message");
    std::string ref_msg, new_msg;
    try {
      std::vector<int32_t> slot_token(4), lru(4);
      cpu_ref::init_swap_in_state({slot_token.data(), lru.data(), 4}, InitialState::kIdentity);
      SwapInPlan plan;
      cpu_ref::swap_in({slot_token.data(), lru.data(), 4}, recs[2].layer(1, 2), 2, recs[2].seq_len, 2, nullptr, 1,
                       {5, 1, 2}, plan);
    } catch (const Error& e) {
      ref_msg = e.what();
    }
    for (int threads : {1, 3}) {
      sim::ReplayOptions o;
      o.policies = {"sglang-lru", "fifo"};
      o.buffer_sizes = {4};
      o.threads = threads;
      new_msg.clear();
      try {
        VectorSource s(meta, recs);
        sim::run_replay(s, o);
      } catch (const Error& e) {
        new_msg = e.what();
      }
      CHECK_FALSE(ref_msg.empty());
      CHECK(ref_msg == new_msg);
      CHECK(new_msg.find("request 5, layer 1, step 2") != std::string::npos);
    }
  }
}

TEST_CASE("counting sglang-lru == cpu_ref::swap_in step by step (scalar and AVX2 walks, several configurations)") {
  std::mt19937_64 rng(99);
  for (int32_t H : {8, 9, 31, 64, 100}) {
    const int32_t K = std::min<int32_t>(H, 24);
    for (InitialState init : {InitialState::kIdentity, InitialState::kEmpty}) {
      std::vector<int32_t> slot_token(H), lru(H);
      cpu_ref::init_swap_in_state({slot_token.data(), lru.data(), H}, init);
      sim::replay_detail::LruTokens scalar, simd;
      scalar.reset(H, init);
      simd.reset(H, init);
      sim::replay_detail::StepMarks marks;
      cpu_ref::SwapInScratch scratch;
      SwapInPlan plan;
      int32_t n = H + 1;
      for (int step = 0; step < 300; ++step) {
        n += static_cast<int32_t>(rng() % 3);  // sometimes n does not grow: a slot may hold the newest token
        std::vector<int32_t> sel;
        std::vector<char> used(n, 0);
        while (static_cast<int32_t>(sel.size()) < K) {
          const int32_t p = rng() % 4 ? n - 1 - static_cast<int32_t>(rng() % std::min(n, 3 * H))
                                      : static_cast<int32_t>(rng() % n);
          if (used[p]) continue;
          used[p] = 1;
          sel.push_back(p);
        }
        if (step % 3 == 0) std::sort(sel.begin(), sel.end());  // ascending: the plain-scatter marking
        if (step % 5 == 0) sel[rng() % sel.size()] = -1;       // padding
        cpu_ref::swap_in({slot_token.data(), lru.data(), H}, sel.data(), K, n, K, nullptr, 1, {}, plan, scratch);
        REQUIRE(marks.mark(sel.data(), K, n, K, H));
        const auto a = sim::replay_detail::lru_slow_step(scalar, sel.data(), K, n, marks, {}, false);
        const auto b = sim::replay_detail::lru_slow_step(simd, sel.data(), K, n, marks, {}, true);
        if (step % 2) marks.clear();  // else the next mark() clears the words this one set
        INFO("H " << H << " step " << step);
        CHECK(a.misses == plan.counters.misses);
        CHECK(a.selected == plan.counters.selected);
        CHECK(a.newest_hits == plan.counters.newest_hits);
        CHECK(b.misses == a.misses);
        CHECK(scalar.tokens() == simd.tokens());
        for (int32_t j = 0; j < H; ++j) CHECK(scalar.tok()[j] == slot_token[lru[j]]);  // tokens in LRU order
      }
    }
  }
}

TEST_CASE("counting sglang-lru == cpu_ref::swap_in when n shrinks, reference steps interleave and misses are few") {
  // The bitmaps' edge cases: held tokens beyond this step's n (the walk reads marks past n), a reference step in
  // between (the held bitmap is rebuilt from the tokens), steps with fewer misses than a vector's 8 lanes and steps
  // with many, empty slots, lists of every length up to H (the front slack for the evicted grows with them).
  std::mt19937_64 rng(4242);
  for (int32_t H : {16, 40, 96}) {
    for (InitialState init : {InitialState::kIdentity, InitialState::kEmpty}) {
      std::vector<int32_t> slot_token(H), lru(H);
      cpu_ref::init_swap_in_state({slot_token.data(), lru.data(), H}, init);
      sim::replay_detail::LruTokens scalar, simd;
      scalar.reset(H, init);
      simd.reset(H, init);
      sim::replay_detail::StepMarks marks;
      cpu_ref::SwapInScratch scratch, ref_scratch;
      SwapInPlan plan, ref_plan;
      std::vector<int32_t> st, sl;
      int32_t n = 3 * H;
      int32_t few = 0, many = 0;
      for (int step = 0; step < 400; ++step) {
        // n wanders down as well as up, never to H or below (the engine's fast path).
        n = std::max(H + 1, n + static_cast<int32_t>(rng() % 9) - 4);
        const int32_t K = 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(H));
        const int32_t window = rng() % 4 ? std::min(n, H + 4) : n;  // mostly near the held set: few misses
        std::vector<int32_t> sel;
        std::vector<char> used(n, 0);
        while (static_cast<int32_t>(sel.size()) < K) {
          const int32_t p = n - 1 - static_cast<int32_t>(rng() % static_cast<uint64_t>(window));
          if (used[p]) continue;
          used[p] = 1;
          sel.push_back(p);
        }
        if (rng() % 2) std::sort(sel.begin(), sel.end());
        if (rng() % 4 == 0) sel[rng() % sel.size()] = -1;
        cpu_ref::swap_in({slot_token.data(), lru.data(), H}, sel.data(), K, n, K, nullptr, 1, {}, plan, scratch);
        INFO("H " << H << " step " << step << " n " << n << " K " << K);
        sim::replay_detail::LruCounts a, b;
        if (step % 7 == 3) {
          a = sim::replay_detail::lru_reference_step(scalar, sel.data(), K, n, K, {}, ref_scratch, ref_plan, st, sl);
          b = sim::replay_detail::lru_reference_step(simd, sel.data(), K, n, K, {}, ref_scratch, ref_plan, st, sl);
        } else {
          REQUIRE(marks.mark(sel.data(), K, n, K, H));
          a = sim::replay_detail::lru_slow_step(scalar, sel.data(), K, n, marks, {}, false);
          b = sim::replay_detail::lru_slow_step(simd, sel.data(), K, n, marks, {}, true);
          marks.clear();
          (a.misses < 8 ? few : many) += 1;
        }
        CHECK(a.misses == plan.counters.misses);
        CHECK(a.selected == plan.counters.selected);
        CHECK(a.newest_hits == plan.counters.newest_hits);
        CHECK(b.misses == a.misses);
        CHECK(scalar.tokens() == simd.tokens());
        for (int32_t j = 0; j < H; ++j) CHECK(scalar.tok()[j] == slot_token[lru[j]]);
      }
      CHECK(few > 20);  // both kinds of step ran
      CHECK(many > 20);
    }
  }
}

TEST_CASE("step marks: an invalid list is refused and leaves no bit behind; the bits are exactly the list's") {
  sim::replay_detail::StepMarks marks;
  const int32_t n = 300;
  auto expect_exactly = [&](const std::vector<int32_t>& sel) {
    std::vector<char> want(n, 0);
    for (int32_t t : sel)
      if (t >= 0) want[t] = 1;
    const uint32_t* w = marks.bits.at();
    int32_t wrong = 0;
    for (int32_t t = 0; t < n; ++t) wrong += static_cast<int32_t>((w[t >> 5] >> (t & 31)) & 1u) != want[t];
    CHECK(wrong == 0);
    CHECK(marks.bits.words[0] == 0u);  // the word an empty slot's -1 reads
  };
  const std::vector<int32_t> asc = {0, 1, 31, 32, 63, 64, 200, 299};
  REQUIRE(marks.mark(asc.data(), 8, n, 8, 8));
  CHECK(marks.selected == 8);
  CHECK(marks.newest_hit == 1);
  expect_exactly(asc);
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{5, 9, 40, 5, 7, 8, 1, 2},    // duplicate
                                          std::vector<int32_t>{5, 9, 40, 300, 7, 8, 1, 2},  // >= n
                                          std::vector<int32_t>{5, 9, 40, -2, 7, 8, 1, 2}}) {  // negative
    CHECK_FALSE(marks.mark(bad.data(), 8, n, 8, 8));
    expect_exactly({});
  }
  const std::vector<int32_t> padded = {270, -1, 3, 64, -1, 33, 2, 100};
  REQUIRE(marks.mark(padded.data(), 8, n, 8, 8));
  CHECK(marks.selected == 6);
  CHECK(marks.newest_hit == 0);
  expect_exactly(padded);
  marks.clear();
  expect_exactly({});
  // Not cleared: the next mark() clears the words itself.
  REQUIRE(marks.mark(asc.data(), 8, n, 8, 8));
  const std::vector<int32_t> other = {7, 8, 9, 10, 11, 12, 13, 14};
  REQUIRE(marks.mark(other.data(), 8, n, 8, 8));
  expect_exactly(other);
  // Beyond the span (256 x (K + H) positions) the caller must use the reference.
  CHECK_FALSE(marks.mark(other.data(), 8, 256 * 16 + 1, 8, 8));
}

TEST_CASE("belady with a bounded look-ahead: exact while a request fits, bounded memory and said so when not") {
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 2;
  g.steps = 40;
  g.prompt_len = 30;
  const Trace t = generated("belady-window", g, false);
  sim::ReplayOptions o;
  o.policies = {"belady", "sglang-lru"};
  o.buffer_sizes = {16, 24};
  o.keep_step_rows = true;
  o.row_bytes = 100;
  MESSAGE("expected: a window holding the whole request gives the reference's belady (the whole future)");
  const Captured ref = reference_replay(t, o.policies, o.buffer_sizes, 100);
  const size_t record = 3 * 16 * 4;  // layers x K x 4 bytes
  // A window of exactly 40 steps (records + one next-use index per size): exact.
  o.lookahead_bytes = 40 * record * 3;
  const Captured fits = engine_replay(t, o);
  check_same(ref, fits);
  CHECK(fits.result.lookahead_steps == 40);
  CHECK(fits.result.lookahead_cut_requests == 0);
  // 8 steps: the window slides by 4 and memory stays bounded; the optimum with the whole future is a lower bound of
  // belady with a bounded look-ahead; sglang-lru is not affected.
  o.lookahead_bytes = 8 * record * 3;
  const Captured cut = engine_replay(t, o);
  CHECK(cut.result.lookahead_steps == 8);
  CHECK(cut.result.lookahead_cut_requests == 2);
  CHECK(cut.result.peak_lookahead_bytes < fits.result.peak_lookahead_bytes);
  for (size_t h = 0; h < 2; ++h) {
    CHECK(cut.result.configs[h].misses >= fits.result.configs[h].misses);        // optimum <= bounded look-ahead
    CHECK(cut.result.configs[2 + h].misses == fits.result.configs[2 + h].misses);  // sglang-lru: not affected
  }
  const std::string text = sim::format_lookahead(cut.result);
  CHECK(text.find("windows of up to 8 steps") != std::string::npos);
  CHECK(text.find("2 of 2 requests are longer than a window") != std::string::npos);
}
