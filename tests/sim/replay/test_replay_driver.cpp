// @brief The replay driver (sim/replay/replay_driver.h) over the CPU reference's session (cpu_ref/swap_in_session_cpu.h)
// and over the fast CPU session (sim/replay/replay_cpu_session.h, the counting sglang-lru) against the plain reference
// replay (tests/sim/replay/plain_replay.h): every per-step row, the totals and the row sink's order identical for every
// online policy, with requests side by side in 1, 2 or all lanes (unequal lengths, so lanes free up at different steps
// and refill), 1 or 3 slots in flight, 1 to 64 steps per slot, 1 and 3 host threads, the caller's cursor alone;
// identity and empty states, padding. Offline policies through the driver's look-ahead stage: belady with the whole
// future while a request fits its window, independent of threads and slot sizes when the window slides. The CUDA
// session is held to the same driver and the same rows in tests/cuda/test_replay_cuda.cpp.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/swap_in_session_cpu.h"
#include "sim/replay/replay_cpu_session.h"
#include "sim/replay/replay_driver.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "tests/sim/replay/plain_replay.h"
#include "tests/sim/vector_trace_source.h"
#include "traces/trace_generator.h"
#include "traces/trace_limits.h"

using namespace hisparse;

namespace {

struct Trace {
  traces::TraceMeta meta;
  std::vector<traces::StepRecord> recs;
  std::unique_ptr<traces::TraceSource> open() const { return std::make_unique<VectorSource>(meta, recs); }
};

/// A generated trace; request r keeps its first 1 + (r * 7) % steps steps (unequal lengths).
Trace uneven(const traces::GeneratorOptions& g, bool pad) {
  auto gen = traces::make_generated_trace(g);
  Trace t;
  t.meta = gen->meta();
  t.meta.source = "generated";
  traces::StepRecord r;
  std::mt19937 rng(3);
  while (gen->next(r)) {
    if (r.step >= 1 + (r.request_id * 7) % g.steps) continue;
    if (pad)
      for (auto& p : r.positions)
        if (rng() % 11 == 0) p = -1;
    t.recs.push_back(r);
  }
  return t;
}

using Run = replay_test::ReplayRun;

const std::vector<std::string> kOnline = {"sglang-lru", "fifo", "lfu", "clock", "topk-only"};

sim::ReplayOptions options(const std::vector<int32_t>& sizes, int threads) {
  sim::ReplayOptions o;
  o.policies = kOnline;
  o.buffer_sizes = sizes;
  o.keep_step_rows = true;
  o.threads = threads;
  o.row_bytes = 100;
  return o;
}

/// The reference: every request, layer and configuration replayed plainly.
Run plain(const Trace& t, const std::vector<int32_t>& sizes) {
  return replay_test::plain_replay(t.meta, t.recs, kOnline, sizes, 100);
}

/// The command's path: run_replay (its option checks, then the driver over the counting session), one thread.
Run command(const Trace& t, const std::vector<int32_t>& sizes) {
  Run out;
  auto src = t.open();
  out.result = sim::run_replay(*src, options(sizes, 1), [&](const sim::ReplayRequestRows& r) { out.rows.push_back(r); });
  return out;
}

struct How {
  int32_t max_rows = 8192;
  int32_t slots = 2;
  int threads = 2;
  bool cursors = true;
  bool counting = false;  // the fast session (counting sglang-lru, rows over threads) instead of the reference one
  int32_t steps = 1;      // the fast session's steps per slot
};

Run driven(const Trace& t, const std::vector<int32_t>& sizes, How how) {
  Run out;
  auto src = t.open();
  sim::ReplayDriverOptions d;
  if (how.cursors) d.open_trace = [&] { return t.open(); };
  d.max_rows = how.max_rows;
  const int32_t slots = how.slots;
  const int threads = how.threads;
  const bool counting = how.counting;
  const int32_t steps = how.steps;
  out.result = sim::run_replay_session(
      *src, options(sizes, how.threads), [&](const sim::ReplayRequestRows& r) { out.rows.push_back(r); }, d,
      [slots, threads, counting, steps](const SwapInSessionShape& shape) -> std::unique_ptr<SwapInSession> {
        if (counting) return std::make_unique<sim::CountingSwapInSession>(shape, threads, slots, steps);
        return std::make_unique<cpu_ref::CpuSwapInSession>(shape, slots);
      });
  return out;
}

void check_same(const Run& a, const Run& b) {
  CHECK(sim::replay_json(a.result, 100, "null") == sim::replay_json(b.result, 100, "null"));
  CHECK(sim::replay_csv(a.result) == sim::replay_csv(b.result));
  CHECK(a.result.step_seq_lens == b.result.step_seq_lens);
  REQUIRE(a.rows.size() == b.rows.size());
  int64_t differing = 0;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(a.rows[i].request_id == b.rows[i].request_id);
    CHECK(a.rows[i].steps == b.rows[i].steps);
    for (size_t c = 0; c < a.rows[i].rows.size(); ++c)
      for (size_t l = 0; l < a.rows[i].rows[c].size(); ++l) {
        const auto& x = a.rows[i].rows[c][l];
        const auto& y = b.rows[i].rows[c][l];
        REQUIRE(x.size() == y.size());
        for (size_t j = 0; j < x.size(); ++j)
          differing += x[j].seq_len != y[j].seq_len || x[j].selected != y[j].selected || x[j].hits != y[j].hits ||
                       x[j].newest_hits != y[j].newest_hits || x[j].misses != y[j].misses;
      }
  }
  CHECK(differing == 0);
}

}  // namespace

TEST_CASE("replay driver over the CPU sessions == the plain replay, every online policy, lanes, slots, threads") {
  for (int variant = 0; variant < 3; ++variant) {
    traces::GeneratorOptions g = traces::generator_preset("tiny");
    g.requests = 6;
    g.steps = 17;
    g.prompt_len = variant == 1 ? 10 : 30;  // variant 1: an empty request's first steps fit (preloaded)
    g.initial_state = variant == 1 ? InitialState::kEmpty : InitialState::kIdentity;
    g.shuffle = variant == 2;
    g.seed = 50 + variant;
    const Trace t = uneven(g, variant == 2);
    const std::vector<int32_t> sizes = {16, 20, 32};
    const Run want = plain(t, sizes);
    MESSAGE("expected: variant " << variant << " gives the plain replay's rows through the driver in every arrangement");
    check_same(want, command(t, sizes));
    REQUIRE(want.rows.size() == 6);
    int64_t misses = 0;
    for (const auto& s : want.result.configs) misses += s.misses;
    CHECK(misses > 0);  // the slow path ran: the comparison is not of zeros
    for (const bool counting : {false, true})
      for (const int32_t lanes : {1, 2, 6})
        for (const int32_t slots : {1, 3})
          for (const int threads : {1, 3}) {
            INFO("variant " << variant << ", counting " << counting << ", lanes " << lanes << ", slots " << slots
                            << ", threads " << threads);
            check_same(want, driven(t, sizes, {lanes * g.layers, slots, threads, true, counting}));
          }
    check_same(want, driven(t, sizes, {8192, 2, 2, false}));        // the caller's cursor, request by request
    check_same(want, driven(t, sizes, {8192, 2, 2, false, true}));
    // Several steps per slot (a row's states stay in cache across them): a slot ends mid-request, requests end and
    // start inside a slot, the trace ends inside one.
    for (const int32_t steps : {2, 5, 64})
      for (const int32_t lanes : {1, 3}) {
        INFO("variant " << variant << ", steps per slot " << steps << ", lanes " << lanes);
        check_same(want, driven(t, sizes, {lanes * g.layers, 2, 2, lanes > 1, true, steps}));
      }
  }
}

TEST_CASE("replay driver: bad records and rows fail naming request (and layer) and step, as run_replay does") {
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 4;
  g.steps = 10;
  g.prompt_len = 30;
  const Trace good = uneven(g, false);
  auto fails_with = [](const Trace& t, bool through_driver) -> std::string {
    try {
      if (through_driver)
        driven(t, {16}, {});
      else
        command(t, {16});
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  // Request 3 has 1 + 21 % 10 = 2 steps; request 2 has 5.
  Trace long_ctx = good;
  for (auto& r : long_ctx.recs)
    if (r.request_id == 2 && r.step == 4) r.seq_len = traces::kMaxSeqLen + 1;
  MESSAGE("expected: a seq_len beyond the bound fails with run_replay's message, through any session");
  const std::string engine_msg = fails_with(long_ctx, false);
  CHECK(engine_msg.find("request 2, step 4: seq_len") != std::string::npos);
  CHECK(fails_with(long_ctx, true) == engine_msg);
  MESSAGE("expected: a duplicate position fails with the contract's message, naming request, layer and step");
  Trace dup = good;
  for (auto& r : dup.recs)
    if (r.request_id == 3 && r.step == 1) r.positions[static_cast<size_t>(g.top_k) + 1] = r.positions[static_cast<size_t>(g.top_k)];
  const std::string msg = fails_with(dup, true);
  CHECK(msg.find("request 3, layer 1, step 1") != std::string::npos);
  CHECK(msg.find("selected twice") != std::string::npos);
  CHECK(fails_with(dup, false) == msg);
  std::string counting_msg;
  try {
    driven(dup, {16}, {8192, 2, 3, true, true});
  } catch (const Error& e) {
    counting_msg = e.what();
  }
  CHECK(counting_msg == msg);
}

TEST_CASE("CPU session: refuses offline policies and bad shapes, steps padding rows not at all") {
  SwapInSessionShape shape;
  shape.rows = 2;
  shape.top_k = 2;
  shape.configs = {{"belady", 4}};
  MESSAGE("expected: belady needs a request's future, which a step-by-step session has not");
  CHECK_THROWS_WITH_AS(cpu_ref::CpuSwapInSession(shape, 1), doctest::Contains("needs each request's future"), Error);
  shape.configs = {{"sglang-lru", 1}};
  CHECK_THROWS_WITH_AS(cpu_ref::CpuSwapInSession(shape, 1), doctest::Contains("smaller than top_k"), Error);
  shape.configs = {{"sglang-lru", 4}};
  cpu_ref::CpuSwapInSession s(shape, 1);
  SessionStaging st = s.staging(0);
  const int32_t lists[4] = {0, 9, 3, 4};
  std::copy(lists, lists + 4, st.selected);
  st.seq_len[0] = 10;  // n > H: position 9 is the newest, 0 is held (identity), nothing loads
  st.seq_len[1] = 0;   // padding row
  st.init[0] = st.init[1] = SessionRowInit::kStart;
  s.submit(0);
  s.wait(0);
  MESSAGE("expected: row 0 selects 2 (one newest hit, one hit, no miss); padding row 1 counts nothing");
  const SessionRowCounts* k = s.counts(0, 0);
  CHECK(k[0].selected == 2);
  CHECK(k[0].newest_hits == 1);
  CHECK(k[0].hits == 1);
  CHECK(k[0].misses == 0);
  CHECK(k[1].selected == 0);
  CHECK(k[1].misses == 0);
}

TEST_CASE("run_replay_cpu_session (the driver as --backend cpu runs it) == the plain replay") {
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 5;
  g.steps = 21;
  g.prompt_len = 28;
  g.seed = 77;
  const Trace t = uneven(g, true);
  const std::vector<int32_t> sizes = {16, 24};
  const Run want = plain(t, sizes);
  for (const int threads : {1, 2, 7})
    for (const size_t batch : {size_t{1}, size_t{3000}, size_t{64} << 20})
      for (const bool cursors : {false, true}) {
        MESSAGE("expected: identical rows with " << threads << " threads, " << batch << " bytes per slot, cursors "
                                                 << cursors);
        Run got;
        auto src = t.open();
        sim::ReplayOptions o = options(sizes, threads);
        o.batch_bytes = batch;
        got.result = sim::run_replay_cpu_session(
            *src, o, [&](const sim::ReplayRequestRows& r) { got.rows.push_back(r); },
            cursors ? std::function<std::unique_ptr<traces::TraceSource>()>([&] { return t.open(); }) : nullptr);
        check_same(want, got);
      }
}

TEST_CASE("the driver's look-ahead stage: belady == the plain replay's whole future, whatever threads and slots") {
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 5;
  g.steps = 21;
  g.prompt_len = 28;
  g.seed = 91;
  const Trace t = uneven(g, true);
  const std::vector<int32_t> sizes = {16, 24};
  const std::vector<std::string> policies = {"belady", "sglang-lru", "fifo"};
  const Run want = replay_test::plain_replay(t.meta, t.recs, policies, sizes, 100);
  int64_t belady_misses = 0;
  for (size_t c = 0; c < 2; ++c) belady_misses += want.result.configs[c].misses;
  CHECK(belady_misses > 0);  // belady's choices matter: the comparison is not of zeros
  auto run = [&](int threads, size_t batch, size_t lookahead, bool reference_lru) {
    Run got;
    auto src = t.open();
    sim::ReplayOptions o = options(sizes, threads);
    o.policies = policies;
    o.batch_bytes = batch;
    o.lookahead_bytes = lookahead;
    o.reference_lru = reference_lru;
    got.result = sim::run_replay_cpu_session(
        *src, o, [&](const sim::ReplayRequestRows& r) { got.rows.push_back(r); }, [&] { return t.open(); });
    return got;
  };
  for (const int threads : {1, 2, 7})
    for (const size_t batch : {size_t{1}, size_t{3000}, size_t{64} << 20}) {
      MESSAGE("expected: the whole future's rows with " << threads << " threads, " << batch << " bytes per slot");
      const Run got = run(threads, batch, size_t{1} << 30, threads == 2);
      check_same(want, got);
      CHECK(got.result.lookahead_cut_requests == 0);
      CHECK(got.result.lookahead_steps > 21);
    }
  // A window of 4 steps (3 layers x K 16 x 4 bytes per record, one record and two next-use indexes per step):
  // requests longer than it slide; the result is the same for every thread count and slot size.
  const size_t record = 3 * 16 * 4;
  const Run cut = run(1, 1, 4 * record * 3, false);
  MESSAGE("expected: a sliding window of 4 steps cuts the requests longer than 4 steps, not sglang-lru's rows");
  CHECK(cut.result.lookahead_steps == 4);
  CHECK(cut.result.lookahead_cut_requests > 0);
  for (size_t h = 0; h < 2; ++h) {
    CHECK(cut.result.configs[h].misses >= want.result.configs[h].misses);  // the optimum bounds a shorter look-ahead
    CHECK(cut.result.configs[2 + h].misses == want.result.configs[2 + h].misses);
  }
  for (const int threads : {2, 7})
    for (const size_t batch : {size_t{3000}, size_t{64} << 20}) check_same(cut, run(threads, batch, 4 * record * 3, true));
}

TEST_CASE("counting session: takes offline policies with their futures; belady without one fails naming the row") {
  SwapInSessionShape shape;
  shape.rows = 1;
  shape.top_k = 2;
  shape.configs = {{"belady", 4}};
  sim::CountingSwapInSession s(shape, 1);
  MESSAGE("expected: the session takes futures (the driver stages them), and a step without one is refused");
  CHECK(s.takes_futures());
  SessionStaging st = s.staging(0);
  REQUIRE(st.futures != nullptr);
  const int32_t list[2] = {0, 9};
  st.lists[0] = list;
  st.seq_len[0] = 10;
  st.init[0] = SessionRowInit::kStart;
  st.request[0] = 7;
  st.step[0] = 3;
  CHECK_THROWS_WITH_AS(s.submit(0), doctest::Contains("request 7, layer 0, step 3: no future given"), Error);
}
