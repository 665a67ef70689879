// @brief The replay engine against direct policy runs, for any thread count and batch size; its errors; the
// report's quantiles and its advice policy.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in_v2.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "tests/sim/vector_trace_source.h"
#include "traces/step_validation.h"
#include "traces/trace_generator.h"

using namespace hisparse;

namespace {


/// A small generated trace, materialised (3 requests so request boundaries fall inside batches).
VectorSource small_trace(InitialState initial = InitialState::kIdentity) {
  traces::GeneratorOptions o = traces::generator_preset("tiny");
  o.requests = 3;
  o.steps = 20;
  o.layers = 3;
  o.top_k = 16;
  o.prompt_len = 30;  // crosses n = H + 1 for H = 32 (fast path first)
  o.initial_state = initial;
  o.seed = 11;
  auto gen = traces::make_generated_trace(o);
  std::vector<traces::StepRecord> recs;
  traces::StepRecord r;
  while (gen->next(r)) recs.push_back(r);
  traces::TraceMeta meta = gen->meta();
  meta.source = "generated:tiny";
  return VectorSource(meta, recs);
}

sim::ReplayOptions options(int threads, size_t batch_bytes = size_t{64} << 20) {
  sim::ReplayOptions o;
  o.policies = {"sglang-lru", "belady", "fifo", "topk-only"};
  o.buffer_sizes = {16, 24, 32};
  o.threads = threads;
  o.row_bytes = 100;
  o.batch_bytes = batch_bytes;
  o.keep_step_rows = true;
  return o;
}

struct Captured {
  sim::ReplayResult result;
  std::vector<sim::ReplayRequestRows> rows;
};

Captured replay(int threads, size_t batch_bytes, const std::vector<std::string>& policies) {
  VectorSource src = small_trace();
  auto o = options(threads, batch_bytes);
  o.policies = policies;
  Captured c;
  c.result = sim::run_replay(src, o, [&](const sim::ReplayRequestRows& r) { c.rows.push_back(r); });
  return c;
}

bool same_rows(const std::vector<sim::ReplayRequestRows>& a, const std::vector<sim::ReplayRequestRows>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].request_id != b[i].request_id || a[i].steps != b[i].steps) return false;
    for (size_t c = 0; c < a[i].rows.size(); ++c) {
      for (size_t l = 0; l < a[i].rows[c].size(); ++l) {
        const auto& x = a[i].rows[c][l];
        const auto& y = b[i].rows[c][l];
        if (x.size() != y.size()) return false;
        for (size_t j = 0; j < x.size(); ++j) {
          if (x[j].misses != y[j].misses || x[j].hits != y[j].hits || x[j].selected != y[j].selected ||
              x[j].newest_hits != y[j].newest_hits || x[j].seq_len != y[j].seq_len) {
            return false;
          }
        }
      }
    }
  }
  return true;
}

/// small_trace()'s records, in order.
std::vector<traces::StepRecord> small_trace_records() {
  VectorSource src = small_trace();
  std::vector<traces::StepRecord> recs;
  traces::StepRecord r;
  while (src.next(r)) recs.push_back(r);
  return recs;
}

}  // namespace

TEST_CASE("replay equals running each policy directly on each (request, layer)") {
  const auto meta = small_trace().meta();
  const std::vector<traces::StepRecord> recs = small_trace_records();
  const Captured got = replay(2, size_t{64} << 20, {"sglang-lru", "belady", "fifo", "topk-only"});
  const auto o = options(1);
  REQUIRE(got.result.configs.size() == o.policies.size() * o.buffer_sizes.size());
  CHECK(got.result.requests == 3);
  CHECK(got.result.decode_steps == 60);
  size_t c = 0;
  for (const auto& policy : o.policies) {
    for (int32_t H : o.buffer_sizes) {
      int64_t misses = 0, selected = 0, fast = 0;
      for (int64_t req = 0; req < 3; ++req) {
        std::vector<const traces::StepRecord*> steps;
        for (const auto& r : recs) {
          if (r.request_id == req) steps.push_back(&r);
        }
        for (int32_t l = 0; l < meta.layers; ++l) {
          auto p = cpu_ref::make_policy(policy);
          p->reset(H, meta.initial_state);
          if (p->needs_future()) {
            std::vector<const int32_t*> sel;
            std::vector<int32_t> counts, ns;
            for (auto* r : steps) {
              sel.push_back(r->layer(l, meta.top_k));
              counts.push_back(meta.top_k);
              ns.push_back(r->seq_len);
            }
            p->set_future(
                std::make_shared<const cpu_ref::LayerFuture>(cpu_ref::build_layer_future(sel, counts, ns, H)));
          }
          cpu_ref::SwapInScratch scratch;
          SwapInPlan plan;
          for (size_t j = 0; j < steps.size(); ++j) {
            p->step({steps[j]->layer(l, meta.top_k), meta.top_k, steps[j]->seq_len, meta.top_k, nullptr, 100}, {},
                    plan, scratch);
            misses += plan.counters.misses;
            selected += plan.counters.selected;
            fast += plan.counters.fast_path;
            CHECK(got.rows[static_cast<size_t>(req)].rows[c][static_cast<size_t>(l)][j].misses == plan.counters.misses);
          }
        }
      }
      const auto& s = got.result.configs[c];
      INFO(policy << " H " << H);
      CHECK(s.policy == policy);
      CHECK(s.buffer_size == H);
      CHECK(s.misses == misses);
      CHECK(s.selected == selected);
      CHECK(s.fast_path_step_layers == fast);
      CHECK(s.h2d_bytes == 100 * misses);
      CHECK(s.step_layers == 60 * meta.layers);
      int64_t hist_total = 0, hist_misses = 0;
      for (size_t m = 0; m < s.miss_hist.size(); ++m) {
        hist_total += s.miss_hist[m];
        hist_misses += static_cast<int64_t>(m) * s.miss_hist[m];
      }
      CHECK(hist_total == s.step_layers);
      CHECK(hist_misses == s.misses);
      ++c;
    }
  }
  // Belady is never worse than the others at the same buffer size.
  for (size_t h = 0; h < o.buffer_sizes.size(); ++h) {
    for (size_t p = 0; p < o.policies.size(); ++p) {
      CHECK(got.result.configs[1 * o.buffer_sizes.size() + h].misses <=
            got.result.configs[p * o.buffer_sizes.size() + h].misses);
    }
  }
}

TEST_CASE("replay output does not depend on thread count or batch size") {
  const std::vector<std::string> online = {"sglang-lru", "fifo", "topk-only"};
  const Captured a = replay(1, size_t{64} << 20, online);
  const Captured b = replay(3, size_t{64} << 20, online);
  const Captured one_step_batches = replay(2, 1, online);  // batch of one record: every boundary inside a request
  const Captured with_belady = replay(3, 1, {"sglang-lru", "belady"});
  const Captured with_belady_1 = replay(1, size_t{64} << 20, {"sglang-lru", "belady"});
  const std::string none = "null";
  CHECK(sim::replay_json(a.result, 100, none) == sim::replay_json(b.result, 100, none));
  CHECK(sim::replay_json(a.result, 100, none) == sim::replay_json(one_step_batches.result, 100, none));
  CHECK(sim::replay_csv(a.result) == sim::replay_csv(one_step_batches.result));
  CHECK(same_rows(a.rows, b.rows));
  CHECK(same_rows(a.rows, one_step_batches.rows));
  CHECK(sim::replay_json(with_belady.result, 100, none) == sim::replay_json(with_belady_1.result, 100, none));
  CHECK(same_rows(with_belady.rows, with_belady_1.rows));
}

TEST_CASE("replay rejects buffer sizes below top_k, unknown policies and bad records") {
  {
    VectorSource src = small_trace();
    auto o = options(1);
    o.buffer_sizes = {8};
    CHECK_THROWS_WITH_AS(sim::run_replay(src, o), doctest::Contains("buffer size 8 (--buffer-sizes) is smaller"),
                         Error);
  }
  {
    VectorSource src = small_trace();
    auto o = options(1);
    o.policies = {"mru"};
    CHECK_THROWS_WITH_AS(sim::run_replay(src, o), doctest::Contains("unknown swap-in policy 'mru'"), Error);
  }
  {
    // A duplicate position deep in request 1, layer 2: the error names request, layer and step.
    traces::TraceMeta meta;
    meta.layers = 3;
    meta.top_k = 2;
    meta.source = "hand-made";
    std::vector<traces::StepRecord> recs;
    for (int64_t req = 0; req < 2; ++req) {
      for (int64_t s = 0; s < 4; ++s) {
        traces::StepRecord r;
        r.request_id = req;
        r.step = s;
        r.seq_len = static_cast<int32_t>(10 + s);
        r.positions = {0, 1, 2, 3, 4, 5};
        if (req == 1 && s == 3) r.positions[4] = r.positions[5] = 7;
        recs.push_back(r);
      }
    }
    for (int threads : {1, 2}) {
      VectorSource src(meta, recs);
      auto o = options(threads);
      o.buffer_sizes = {4};
      CHECK_THROWS_WITH_AS(sim::run_replay(src, o),
                           doctest::Contains("request 1, layer 2, step 3: position 7 is selected twice"), Error);
    }
  }
}

TEST_CASE("replay report: nearest-rank quantiles, the advice policy, no recommendation of its own") {
  // 100 values: 90 zeros, 9 fives, 1 nine -> p50 0, p90 0, p91 5, p99 5, p100 9.
  std::vector<int64_t> h(10, 0);
  h[0] = 90;
  h[5] = 9;
  h[9] = 1;
  CHECK(sim::histogram_quantile(h, 0.5) == 0);
  CHECK(sim::histogram_quantile(h, 0.90) == 0);
  CHECK(sim::histogram_quantile(h, 0.91) == 5);
  CHECK(sim::histogram_quantile(h, 0.99) == 5);
  CHECK(sim::histogram_quantile(h, 1.0) == 9);
  CHECK(sim::histogram_quantile(std::vector<int64_t>(3, 0), 0.99) == 0);

  sim::ReplayResult r;
  for (const char* policy : {"belady", "sglang-lru"}) {
    for (int32_t H : {4096, 2048, 8192}) {
      sim::ReplayConfigStats s;
      s.policy = policy;
      s.buffer_size = H;
      s.miss_hist.assign(1000, 0);
      s.miss_hist[H == 2048 ? 900 : H == 4096 ? 400 : 100] = 100;
      s.step_miss_hist.assign(1000, 0);
      r.configs.push_back(s);
    }
  }
  // Advice is given for what SGLang runs when it was replayed, whatever the order.
  CHECK(sim::recommended_policy(r) == "sglang-lru");
  // The table states the curves and nothing about a buffer size to use: that needs a deployment.
  const std::string table = sim::format_replay_table(r, 1152);
  CHECK(table.find("recommend") == std::string::npos);
  CHECK(table.find("budget") == std::string::npos);
  const std::string json = sim::replay_json(r, 1152, "{\"device_buffer_size\": null}");
  CHECK(json.find("\"recommendation\": {\"device_buffer_size\": null}") != std::string::npos);
  CHECK(json.find("\"row_bytes\": 1152") != std::string::npos);
}

TEST_CASE("strictly_ascending (the readers' and the replay's fast check) == the pairwise definition") {
  std::mt19937 rng(3);
  for (int32_t count = 0; count < 300; ++count) {
    std::vector<int32_t> v(static_cast<size_t>(count));
    int32_t x = -5;
    for (auto& e : v) e = x += 1 + static_cast<int32_t>(rng() % 3);
    CHECK(traces::strictly_ascending(v.data(), count));
    // Every pair position (vector-block edges included) and both kinds of failure: equal and descending.
    for (int32_t i = 1; i < count; ++i) {
      for (int32_t delta : {0, -1}) {
        std::vector<int32_t> w = v;
        w[static_cast<size_t>(i)] = w[static_cast<size_t>(i) - 1] + delta;
        if (i + 1 < count) w[static_cast<size_t>(i) + 1] = std::max(w[static_cast<size_t>(i) + 1], w[i] + 1);
        bool want = true;
        for (int32_t k = 1; k < count; ++k) want &= w[static_cast<size_t>(k)] > w[static_cast<size_t>(k) - 1];
        CHECK_FALSE(want);
        CHECK(traces::strictly_ascending(w.data(), count) == want);
      }
    }
  }
}

TEST_CASE("replay counts hisparse-v2's three sources apart: resident pages, buffer hits, host copies") {
  // Under each coordinator (--v2-coordinator), every (request, layer, step) row of the replay equals
  // cpu_ref::swap_in_v2 run directly with the request's admitted evicted prefix (page 4: the page-aligned prompt of
  // the first step, 0 under the current rules when shorter than H), the three counters summing to selected:
  // newest_hits = resident device pages, hits = buffer hits, misses = host copies. Threads do not change a row.
  const auto meta = small_trace().meta();
  const std::vector<traces::StepRecord> recs = small_trace_records();
  for (const V2Coordinator rules : {V2Coordinator::kCurrent, V2Coordinator::kOlder}) {
  INFO("rules " << cpu_ref::v2_coordinator_name(rules));
  auto o = options(1);
  o.v2_coordinator = rules;
  o.policies = {"hisparse-v2:4"};
  o.buffer_sizes = {16, 32};
  Captured one, three;
  for (Captured* c : {&one, &three}) {
    VectorSource s = small_trace();
    o.threads = c == &one ? 1 : 3;
    c->result = sim::run_replay(s, o, [&](const sim::ReplayRequestRows& r) { c->rows.push_back(r); });
  }
  CHECK(same_rows(one.rows, three.rows));
  REQUIRE(one.rows.size() == 3);
  int64_t resident_total = 0, hits_total = 0, misses_total = 0;
  for (size_t c = 0; c < o.buffer_sizes.size(); ++c) {
    const int32_t H = o.buffer_sizes[c];
    for (int64_t req = 0; req < 3; ++req) {
      std::vector<const traces::StepRecord*> steps;
      for (const auto& r : recs)
        if (r.request_id == req) steps.push_back(&r);
      const int32_t end = v2_admitted_evicted_end(steps.front()->seq_len, 4, H, rules);
      for (int32_t l = 0; l < meta.layers; ++l) {
        std::vector<int32_t> slot_pos(H, -1);
        cpu_ref::SwapInScratch scratch;
        SwapInPlan plan;
        for (size_t j = 0; j < steps.size(); ++j) {
          const cpu_ref::SwapInV2Step in{steps[j]->layer(l, meta.top_k), meta.top_k, steps[j]->seq_len, meta.top_k,
                                         end, 4, nullptr, 100};
          cpu_ref::swap_in_v2({slot_pos.data(), H}, in, {}, plan, scratch);
          const sim::ReplayStepRow& row = one.rows[static_cast<size_t>(req)].rows[c][static_cast<size_t>(l)][j];
          INFO("H " << H << " request " << req << " layer " << l << " step " << j);
          CHECK(row.newest_hits == plan.counters.newest_hits);
          CHECK(row.hits == plan.counters.hits);
          CHECK(row.misses == plan.counters.misses);
          CHECK(row.selected == row.newest_hits + row.hits + row.misses);
          resident_total += row.newest_hits;
          hits_total += row.hits;
          misses_total += row.misses;
        }
      }
    }
  }
  // The trace exercises all three sources.
  CHECK(resident_total > 0);
  CHECK(hits_total > 0);
  CHECK(misses_total > 0);
  }
}

TEST_CASE("replay's hisparse-v2 admission: the current coordinator runs a prefix shorter than H as standard") {
  // small_trace's first step has seq_len n0 = 30 (a 29-token prompt), so page 4 gives an evicted prefix of
  // floor(29 / 4) * 4 = 28 tokens. At H = 32 > 28 the current rules run every request as standard: every entry a
  // resident page, no hit, no miss; the older rules evict [0, 28) and miss. At H = 16 <= 28 both evict the same.
  std::vector<sim::ReplayResult> by_rules;
  for (const V2Coordinator rules : {V2Coordinator::kCurrent, V2Coordinator::kOlder}) {
    VectorSource s = small_trace();
    auto o = options(1);
    o.v2_coordinator = rules;
    o.policies = {"hisparse-v2:4"};
    o.buffer_sizes = {16, 32};
    by_rules.push_back(sim::run_replay(s, o));
  }
  const auto& cur = by_rules[0].configs;
  const auto& old = by_rules[1].configs;
  CHECK(cur[1].misses == 0);
  CHECK(cur[1].hits == 0);
  CHECK(cur[1].newest_hits == cur[1].selected);
  CHECK(old[1].misses > 0);
  CHECK(cur[0].misses == old[0].misses);
  CHECK(cur[0].hits == old[0].hits);
  // A policy naming its rules keeps them whatever --v2-coordinator says.
  VectorSource s = small_trace();
  auto o = options(1);
  o.v2_coordinator = V2Coordinator::kCurrent;
  o.policies = {"hisparse-v2:4:older"};
  o.buffer_sizes = {32};
  CHECK(sim::run_replay(s, o).configs[0].misses == old[1].misses);
}

TEST_CASE("replay refuses hisparse-v2 at a top_k its kernel cannot run, naming the rule, the value and the fix") {
  // small_trace's top_k is 16: at the default page 64 it is not a multiple of the page (the coordinator's assert).
  VectorSource s = small_trace();
  auto o = options(1);
  o.policies = {"hisparse-v2"};
  o.buffer_sizes = {64};
  CHECK_THROWS_WITH_AS(sim::run_replay(s, o), doctest::Contains("top_k 16 cannot run under HiSparse V2"), Error);
  VectorSource s2 = small_trace();
  CHECK_THROWS_WITH_AS(sim::run_replay(s2, o), doctest::Contains("record the trace with top_k 64"), Error);
}

TEST_CASE("replay's hisparse-v2 session: no pressure keeps every prefix on the device (current), older as before") {
  // small_trace: 3 requests, first n 30 (a 29-token prompt: prefix 28 at page 4), 20 steps; H 16 <= 28, so both
  // rules admit every request as V2. A pool of 2^30 tokens never runs short: under the current rules nothing is
  // evicted, so every selected entry is a resident device page (no hit, no miss); under the older rules each prefix
  // [0, 28) is on the host from admission, exactly the replay without a session.
  for (const V2Coordinator rules : {V2Coordinator::kCurrent, V2Coordinator::kOlder}) {
    INFO("rules " << cpu_ref::v2_coordinator_name(rules));
    auto o = options(1);
    o.v2_coordinator = rules;
    o.policies = {"hisparse-v2:4"};
    o.buffer_sizes = {16};
    VectorSource plain = small_trace();
    const sim::ReplayResult before = sim::run_replay(plain, o);
    o.v2_pools = cpu_ref::V2SessionPools{int64_t{1} << 30, 0, -1, 8};
    o.open_trace = [] { return std::make_unique<VectorSource>(small_trace()); };
    VectorSource s = small_trace();
    const sim::ReplayResult with = sim::run_replay(s, o);
    const auto& c = with.configs[0];
    if (rules == V2Coordinator::kCurrent) {
      CHECK(c.misses == 0);
      CHECK(c.hits == 0);
      CHECK(c.newest_hits == c.selected);
      CHECK(before.configs[0].misses > 0);
    } else {
      CHECK(c.misses == before.configs[0].misses);
      CHECK(c.hits == before.configs[0].hits);
      CHECK(c.newest_hits == before.configs[0].newest_hits);
    }
  }
}

TEST_CASE("replay's hisparse-v2 session under pressure: every row equals cpu_ref following the session's schedule") {
  // A pool of 100 tokens for three requests of 29 + 16 (temp) tokens each and 20 steps: prefixes are evicted leaf
  // first (nodes of 8) and requests retracted. Every (request, layer, step) row of the replay equals
  // cpu_ref::swap_in_v2 run directly with the schedule's range at that step, the buffer emptied where a phase starts a
  // fresh one; the session retracts at least once and evicts some prefix only partly (the pool is that tight).
  const auto meta = small_trace().meta();
  const std::vector<traces::StepRecord> recs = small_trace_records();
  auto o = options(1);
  o.policies = {"hisparse-v2:4"};
  o.buffer_sizes = {16};
  o.v2_pools = cpu_ref::V2SessionPools{100, 0, -1, 8};
  o.open_trace = [] { return std::make_unique<VectorSource>(small_trace()); };
  Captured got;
  VectorSource s = small_trace();
  got.result = sim::run_replay(s, o, [&](const sim::ReplayRequestRows& r) { got.rows.push_back(r); });
  std::vector<cpu_ref::V2RequestSteps> steps;
  for (const auto& r : recs) {
    if (steps.empty() || steps.back().id != r.request_id) steps.push_back({r.request_id, r.seq_len, 0});
    ++steps.back().steps;
  }
  const cpu_ref::V2Schedule sched = cpu_ref::plan_v2_session(steps, 16, 4, V2Coordinator::kCurrent, *o.v2_pools);
  CHECK(sched.counts.retractions > 0);
  CHECK(sched.counts.evicted_tokens > 0);
  REQUIRE(got.rows.size() == 3);
  for (int64_t req = 0; req < 3; ++req) {
    std::vector<const traces::StepRecord*> st;
    for (const auto& r : recs)
      if (r.request_id == req) st.push_back(&r);
    for (int32_t l = 0; l < meta.layers; ++l) {
      std::vector<int32_t> slot_pos(16, -1);
      cpu_ref::SwapInScratch scratch;
      SwapInPlan plan;
      int32_t applied = -1;
      for (size_t j = 0; j < st.size(); ++j) {
        int32_t index = -1;
        const cpu_ref::V2Phase* p = sched.phase(req, st[j]->seq_len, &index);
        REQUIRE(p != nullptr);
        if (index != applied && p->fresh_buffer) std::fill(slot_pos.begin(), slot_pos.end(), -1);
        applied = index;
        const cpu_ref::SwapInV2Step in{st[j]->layer(l, meta.top_k), meta.top_k, st[j]->seq_len, meta.top_k,
                                       p->evicted_end, 4, nullptr, 100, p->evicted_begin};
        cpu_ref::swap_in_v2({slot_pos.data(), 16}, in, {}, plan, scratch);
        const sim::ReplayStepRow& row = got.rows[static_cast<size_t>(req)].rows[0][static_cast<size_t>(l)][j];
        INFO("request " << req << " layer " << l << " step " << j);
        CHECK(row.newest_hits == plan.counters.newest_hits);
        CHECK(row.hits == plan.counters.hits);
        CHECK(row.misses == plan.counters.misses);
      }
    }
  }
}
