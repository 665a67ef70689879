// @brief The radix prefix cache inside `simulate` (sim/serving/prefix_cache.cpp, prefix/rank_prefix_cache.h) and
// multi-turn sessions (sim/serving/sessions.cpp): a hand-built two-turn session hits exactly its shared pages and is
// released after its previous turn's end + think time; a running request's locked prefix survives eviction; eviction
// under pressure never turns a request away that fits the empty pool; the cache off (or a workload without prefix
// blocks) leaves every output as it was.
#include <doctest/doctest.h>

#include "core/error.h"

#include <string>
#include <vector>

#include "sim/serving/pools.h"
#include "sim/serving/prefix/rank_prefix_cache.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

/// The shipped node as one TP8 rank with colocated prefill (SGLang keeps its radix cache there).
Scenario colocated_rank() {
  Scenario sc = dsv32_node();
  sc.deployment.pd_disaggregation = false;
  sc.deployment.decode.dp_attention = 1;
  return sc;
}

/// One session of two turns in 512-token blocks: turn 0 an 8,192-token prompt (blocks 1..16), turn 1 the same 16
/// blocks then 576 new tokens (blocks 17 and 18: 512 + 64), arriving at 0.5 s (a lower bound) after a 2 s think time.
/// Blocks first, first + 1, ..., last.
std::vector<uint64_t> block_range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> v;
  for (uint64_t b = first; b <= last; ++b) v.push_back(b);
  return v;
}

/// A 512-token-block workload of one session, `t0` then `t1` (its session fields set here).
Workload session_of(const std::string& name, RequestSpec t0, RequestSpec t1) {
  Workload w;
  w.name = name;
  w.block_tokens = 512;
  t0.session_id = t1.session_id = 7;
  t1.turn = 1;
  w.requests = {t0, t1};
  return w;
}

Workload two_turns() {
  RequestSpec t1{1, 500'000'000, 8768, 10, block_range(1, 18)};
  t1.think_time = 2 * kNsPerSecond;
  return session_of("two turns", RequestSpec{0, 0, 8192, 10, block_range(1, 16)}, t1);
}

ServingResult run(const Scenario& sc, const Workload& w, KvMode mode, bool cache) {
  ServingOptions o;
  o.mode = mode;
  o.prefix_cache = cache;
  return run_serving(sc, w, o);
}

}  // namespace

// Page arithmetic (page_size 64): turn 0's keys are blocks 1..16, 8 pages each (128); turn 1's are 128 + 8 + 1 = 137
// pages, of which it may match at most (8768 − 1) / 64 = 136. Turn 0 has finished before turn 1 is sent (the session
// waits), so its 128 pages are cached: turn 1 hits exactly 128 pages = 8,192 tokens, and prefills 8768 − 8192 = 576.
TEST_CASE("prefix cache: a hand-built two-turn session hits exactly its shared pages, full KV and HiSparse") {
  const Scenario sc = colocated_rank();
  for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse}) {
    CAPTURE(to_string(mode));
    const ServingResult on = run(sc, two_turns(), mode, true);
    REQUIRE(on.finished == 2);
    CHECK(on.prefix_cache);
    CHECK(on.prefix_cache_pool == (mode == KvMode::kFull ? "kv" : "host"));
    CHECK(on.requests[0].cached_tokens == 0);
    CHECK(on.requests[1].cached_tokens == 8192);
    CHECK(on.prefix_hit_tokens == 8192);
    CHECK(on.prefix_input_tokens == 8192 + 8768);
    CHECK(prefix_hit_rate(on) == doctest::Approx(8192.0 / (8192 + 8768)));
    CHECK(on.prefill_tokens == 8192 + 576);
    // Both prompts' pages end up cached: 128 from turn 0, then turn 1's 137 of which 128 were there.
    CHECK(on.prefix_inserted_pages == 128 + 9);
    CHECK(on.prefix_peak_tokens_per_rank == 137 * 64);
    // Expected: the session holds turn 1 (it arrives at 0.5 s, before turn 0 ends) and sends it 2 s after turn 0's
    // last token.
    CHECK(on.sessions == 1);
    CHECK(on.held_turns == 1);
    CHECK(on.requests[1].arrival == on.requests[0].finish + 2 * kNsPerSecond);
    // Expected: the cache off prefills both prompts whole, and turn 1's first token comes later than with the hit.
    const ServingResult off = run(sc, two_turns(), mode, false);
    CHECK_FALSE(off.prefix_cache);
    CHECK(off.requests[1].cached_tokens == 0);
    CHECK(off.prefill_tokens == 8192 + 8768);
    CHECK(off.requests[1].first_token - off.requests[1].arrival > on.requests[1].first_token - on.requests[1].arrival);
  }
}

// The answer keyed (RequestSpec::sequence_blocks): turn 0 is an 8,192-token prompt (blocks 1..16) answered with 1,024
// tokens, its prompt + answer blocks 1..18; turn 1 resends all 9,216 tokens and adds 576 (blocks 19, 20). Turn 0
// inserts at its finish the whole pages of 9,216 − 1 written tokens: 17 blocks × 8 + 7 = 143 pages; turn 1 may match
// (9,792 − 1) / 64 = 152 and matches those 143: 9,152 tokens hit (against 8,192 with the prompt alone), 640 prefilled.
TEST_CASE("prefix cache: a finished turn's answer is cached where the workload keys it, and the next turn hits it") {
  RequestSpec t0{0, 0, 8192, 1024, block_range(1, 16)};
  t0.sequence_blocks = block_range(1, 18);
  const Workload w = session_of("two turns, answer keyed", t0, RequestSpec{1, 0, 9792, 10, block_range(1, 20)});
  for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse}) {
    CAPTURE(to_string(mode));
    const ServingResult on = run(colocated_rank(), w, mode, true);
    REQUIRE(on.finished == 2);
    CHECK(on.requests[1].cached_tokens == 143 * 64);
    CHECK(on.prefill_tokens == 8192 + 640);
    // Expected: the cache held turn 0's 143 pages, then turn 1's prompt pages beyond them (153 − 143 = 10).
    CHECK(on.prefix_inserted_pages == 143 + 10);
  }
}

// Closed loop over the two-turn session with one client: the client sends turn 0, and turn 1 only once turn 0 ended
// plus turn 1's 2 s think time (its workload arrival, 0.5 s, counts no more), so turn 1 hits turn 0's 128 cached
// pages; a third request starts the session over (the workload holds one session), after the clients' think time.
TEST_CASE("sessions under closed-loop clients: a client sends a session's turns in order, each after the previous") {
  ServingOptions o;
  o.mode = KvMode::kHiSparse;
  o.prefix_cache = true;
  o.clients.concurrency = 1;
  o.clients.requests = 3;
  o.clients.think_time = kNsPerSecond / 10;
  const ServingResult r = run_serving(colocated_rank(), two_turns(), o);
  REQUIRE(r.finished == 3);
  CHECK(r.sessions == 2);
  CHECK(r.requests[0].input_tokens == 8192);
  CHECK(r.requests[1].input_tokens == 8768);
  CHECK(r.requests[2].input_tokens == 8192);
  CHECK(r.requests[1].arrival == r.requests[0].finish + 2 * kNsPerSecond);
  CHECK(r.requests[2].arrival == r.requests[1].finish + kNsPerSecond / 10);
  CHECK(r.requests[1].cached_tokens == 8192);
  // Expected: turn 0 again finds its own 128 pages cached (at most (8192 − 1) / 64 = 127 of them may match).
  CHECK(r.requests[2].cached_tokens == 127 * 64);
  // A request outside any session among sessions: the clients cannot run it as a session, so an error says so.
  Workload mixed = two_turns();
  mixed.requests[1].session_id = -1;
  CHECK_THROWS_WITH_AS(run_serving(colocated_rank(), mixed, o), doctest::Contains("request 1 is in no session"),
                       hisparse::Error);
}

// Ten pages of 64 tokens. A finished request left pages 1..4 cached; a running request matches and locks them; an
// unrelated finished one left pages 9, 10. Expected: asking the pool for all ten pages can free only 9 and 10 (the
// locked prefix stays); once the running request unlocks, everything goes.
TEST_CASE("prefix cache: a running request's locked prefix is never evicted") {
  PoolSizes sizes;
  sizes.logical = 640;
  RankPools pools(sizes);
  RankPrefixCache cache(pools, 0, 64);
  cache.release(RankPrefixCache::Hold{}, nullptr, 0);  // nothing held: a no-op
  const std::vector<RadixCache::Key> a = {1, 2, 3, 4}, b = {9, 10};
  cache.release(cache.acquire(a, 0, 1), &a, 2);
  CHECK(cache.pages() == 4);
  CHECK(pools.held(kPrefixCacheOwner, 0) == 4 * 64);
  CHECK(pools.free_tokens(0) == 6 * 64);
  const RankPrefixCache::Offer offer = cache.offer(a, 4);
  CHECK(offer.hit_tokens == 4 * 64);
  CHECK(offer.reclaimable_tokens == 0);  // the only cached pages are the ones it matches
  const RankPrefixCache::Hold running = cache.acquire(a, 4, 3);
  CHECK(running.tokens == 4 * 64);
  cache.release(cache.acquire(b, 0, 4), &b, 5);
  CHECK(cache.pages() == 6);
  CHECK_FALSE(cache.make_room(10 * 64, 6));
  CHECK(cache.pages() == 4);
  CHECK(cache.evicted_pages() == 2);
  CHECK(pools.free_tokens(0) == 6 * 64);
  cache.release(running, nullptr, 7);
  CHECK(cache.make_room(10 * 64, 8));
  CHECK(cache.pages() == 0);
  CHECK(pools.held(kPrefixCacheOwner, 0) == 0);
  // Time-weighted pages: 4 pages over [2, 4), 6 over [5, 6) — intervals close at each change, from t = 0.
  CHECK(cache.page_ns(8) == doctest::Approx(0 * 2 + 4 * 3 + 6 * 1 + 4 * 2));
}

// Twenty pages of 64 tokens, full KV. A (block 1: 512 tokens, 8 pages) finishes and leaves its 8 pages cached. B
// (block 1 then 64 tokens of block 2, 400 output tokens) hits those 8 pages and, once prefilled, has its 9 prompt pages
// in the cache, locked while it runs, and paged(576 + 400) − 9 × 64 = 7 pages of its own: 4 pages free. C (a new
// 512-token block, 10 output tokens) needs paged(522) = 9 pages. Expected: C cannot evict B's locked prefix, so it
// waits for B's finish (then B's 7 pages free up and C fits without evicting anything), and it finishes.
TEST_CASE("prefix cache: a running request's locked prefix is not evicted for another's admission") {
  Scenario sc = colocated_rank();
  sc.deployment.memory.full_pool_tokens = 1280;
  Workload w;
  w.name = "locked";
  w.block_tokens = 512;
  w.requests = {RequestSpec{0, 0, 512, 200, {1}}, RequestSpec{1, 20 * kNsPerSecond, 576, 400, {1, 2}},
                RequestSpec{2, 21 * kNsPerSecond, 512, 10, {9}}};
  const ServingResult r = run(sc, w, KvMode::kFull, true);
  REQUIRE(r.logical_pool_tokens == 1280);  // the case's premise: twenty pages
  REQUIRE(r.requests[0].finish < r.requests[1].arrival);  // A is cached before B arrives
  REQUIRE(r.requests[1].first_token < r.requests[2].arrival);  // B's prefix is cached and locked when C arrives
  CHECK(r.requests[1].cached_tokens == 512);
  CHECK(r.finished == 3);
  CHECK(r.requests[2].admitted == r.requests[1].finish);
  CHECK(r.prefix_evicted_pages == 0);
}

// A pool of ten pages and one request at a time, each a new 384-token prompt (6 pages, nothing shared) with 100
// output tokens (paged(484) = 8 pages). Every finished request leaves its 6 prompt pages cached, so the next one finds
// 4 pages free and needs 8: the cache must evict. Expected: every request finishes as with the cache off, pages were
// evicted, and the cache never held more than the pool.
TEST_CASE("prefix cache: eviction under pressure admits every request that fits the empty pool") {
  Scenario sc = colocated_rank();
  sc.deployment.memory.full_pool_tokens = 640;
  Workload w;
  w.name = "pressure";
  w.block_tokens = 512;
  for (int i = 0; i < 6; ++i)
    w.requests.push_back(RequestSpec{i, static_cast<SimTime>(i) * 10 * kNsPerSecond, 384, 100,
                                     {static_cast<uint64_t>(100 + i)}});
  const ServingResult on = run(sc, w, KvMode::kFull, true);
  const ServingResult off = run(sc, w, KvMode::kFull, false);
  REQUIRE(on.logical_pool_tokens == 640);  // the case's premise: ten pages
  CHECK(off.finished == 6);
  CHECK(on.finished == 6);
  CHECK(on.rejected == 0);
  CHECK(on.prefix_hit_tokens == 0);
  CHECK(on.prefix_inserted_pages == 6 * 6);
  CHECK(on.prefix_evicted_pages >= 5 * 6);  // each admission after the first evicts the previous prompt
  CHECK(on.prefix_peak_tokens_per_rank <= 640);
}

// Expected: with the cache off, or on over a workload that names no prefix blocks, every figure and file is the old
// one: the summary, the per-request and per-step CSV are byte-identical to a run without the option.
TEST_CASE("prefix cache: off, or on without prefix blocks, changes no output") {
  const Scenario sc = colocated_rank();
  Workload plain = generated(3, 2.0, 4.0);
  Workload blocks = two_turns();
  for (RequestSpec& r : blocks.requests) r.session_id = -1;  // only the blocks differ from a plain workload
  for (KvMode mode : {KvMode::kFull, KvMode::kHiSparse}) {
    CAPTURE(to_string(mode));
    const ServingResult a = run(sc, plain, mode, false), b = run(sc, plain, mode, true);
    CHECK_FALSE(b.prefix_cache);
    CHECK(summary_json(a, sc) == summary_json(b, sc));
    CHECK(requests_csv(a) == requests_csv(b));
    CHECK(steps_csv(a) == steps_csv(b));
    Workload stripped = blocks;
    stripped.block_tokens = 0;
    for (RequestSpec& r : stripped.requests) r.prefix_blocks.clear();
    const ServingResult c = run(sc, blocks, mode, false), d = run(sc, stripped, mode, true);
    CHECK(summary_json(c, sc) == summary_json(d, sc));
    CHECK(requests_csv(c) == requests_csv(d));
  }
}

TEST_CASE("prefix cache: PD + HiSparse with the cache on is refused, as SGLang refuses it") {
  Scenario sc = dsv32_node();  // PD, prefill outside the scenario
  REQUIRE(sc.deployment.pd_disaggregation);
  const std::string err = [&] {
    try {
      run(sc, two_turns(), KvMode::kHiSparse, true);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(err.find("--enable-hisparse") != std::string::npos);
  // Full KV on the same PD node: the decode rank's cache hits, and the transfer carries only the rest.
  const ServingResult full = run(sc, two_turns(), KvMode::kFull, true);
  CHECK(full.requests[1].cached_tokens == 8192);
  CHECK(full.rdma_bytes < run(sc, two_turns(), KvMode::kFull, false).rdma_bytes);
}

TEST_CASE("sessions: a turn without its previous turn is an error naming the workload, session and turn") {
  Workload w = two_turns();
  w.requests[1].turn = 2;
  const std::string err = [&] {
    try {
      run(colocated_rank(), w, KvMode::kFull, false);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(err.find("two turns") != std::string::npos);
  CHECK(err.find("session 7 has turn 2") != std::string::npos);
}
