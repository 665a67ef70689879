// @brief HiSparse V2 over a multi-request trace, hand-worked: HiCache's eviction per radix node, leaf first
// (core/hisparse_v2.h v2_evicted_begin) and what it leaves on the device for the swap-in (cpu_ref/swap_in_v2.h
// evicted_begin); the session (cpu_ref/memory/hisparse_v2_session.h): pool pressure evicting the oldest prefix's
// tail, a temp-buffer fallback, a retraction and the re-admission with a recomputed prefix; and the hisparse-v2
// policy following a schedule (its buffer restarts empty at the re-admission).
#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/memory/hisparse_v2_session.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in_v2.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

TEST_CASE("v2 eviction: current evicts whole radix nodes from the tail, older the whole prefix") {
  // The prefix E = 4032 (63 pages of 64) in nodes of 1024 tokens: [0,1024) [1024,2048) [2048,3072)
  // [3072,4032); the leaf holds 4032 - 3072 = 960 tokens.
  const auto cur = V2Coordinator::kCurrent;
  CHECK(v2_evicted_begin(4032, 1024, 0, cur) == 4032);     // no demand: nothing on the host
  CHECK(v2_evicted_begin(4032, 1024, 500, cur) == 3072);   // the leaf alone frees 960 >= 500
  CHECK(v2_evicted_begin(4032, 1024, 960, cur) == 3072);   // exactly the leaf
  CHECK(v2_evicted_begin(4032, 1024, 961, cur) == 2048);   // 960 + the next node's 1024 = 1984 >= 961
  CHECK(v2_evicted_begin(4032, 1024, 3008, cur) == 1024);  // 960 + 2 x 1024 = 3008: the two nodes before the leaf
  CHECK(v2_evicted_begin(4032, 1024, 3009, cur) == 0);     // one token more takes the head node too
  CHECK(v2_evicted_begin(4032, 1024, 4032, cur) == 0);
  CHECK(v2_evicted_begin(4032, 1024, 9999, cur) == 0);
  CHECK(v2_evicted_begin(4032, 0, 1, cur) == 0);           // one node: any demand takes all of it
  CHECK(v2_evicted_begin(0, 1024, 10, cur) == 0);          // no prefix
  for (const int32_t demand : {0, 1, 4032}) CHECK(v2_evicted_begin(4032, 1024, demand, V2Coordinator::kOlder) == 0);
}

TEST_CASE("v2 swap-in: positions before the evicted tail stay on the device (both coordinators)") {
  // H 8, K 4, page 4, n 21: prefix E = 20 in nodes of 8: [0,8) [8,16) [16,20). Current, demand 12: the leaf (4) and
  // [8,16) (8) -> [8, 20) on the host. Older: [0, 20). Step T = [20, 3, 9, 15]:
  //   current: 20 (>= E) and 3 (< 8) resident at slot H = 8; 9 and 15 load into the empty slots 0 and 1;
  //   older:   only 20 resident; 3, 9, 15 load into slots 0, 1, 2.
  const std::vector<int32_t> T = {20, 3, 9, 15};
  for (const V2Coordinator rules : {V2Coordinator::kCurrent, V2Coordinator::kOlder}) {
    const bool current = rules == V2Coordinator::kCurrent;
    const int32_t begin = v2_evicted_begin(20, 8, 12, rules);
    CHECK(begin == (current ? 8 : 0));
    std::vector<int32_t> slot_pos(8, -1);
    SwapInScratch scratch;
    SwapInPlan plan;
    const SwapInV2Step in{T.data(), 4, 21, 4, 20, 4, nullptr, 1, begin};
    swap_in_v2({slot_pos.data(), 8}, in, {0, 0, 0}, plan, scratch);
    CHECK(plan.slot_of == (current ? std::vector<int32_t>{8, 8, 0, 1} : std::vector<int32_t>{8, 0, 1, 2}));
    CHECK(plan.counters.newest_hits == (current ? 2 : 1));
    CHECK(plan.counters.misses == (current ? 2 : 3));
    CHECK(slot_pos == (current ? std::vector<int32_t>{9, 15, -1, -1, -1, -1, -1, -1}
                               : std::vector<int32_t>{3, 9, 15, -1, -1, -1, -1, -1}));
  }
  // A range with begin past end is refused, the state unchanged.
  std::vector<int32_t> slot_pos(8, -1);
  SwapInScratch scratch;
  SwapInPlan plan;
  const SwapInV2Step bad{T.data(), 4, 21, 4, 20, 4, nullptr, 1, 24};
  CHECK_THROWS_AS(swap_in_v2({slot_pos.data(), 8}, bad, {0, 0, 0}, plan, scratch), Error);
  CHECK(slot_pos == std::vector<int32_t>(8, -1));
}

TEST_CASE("v2 session: pool pressure evicts the oldest prefix's tail nodes (current) or whole prefixes (older)") {
  // Page 4, H 8, nodes of 8 tokens, device pool 76. A and B: prompts of 32 tokens (first n 33), 3 steps each.
  // Current: A prefill 32 + temp 8 = 40 used. B prefill 32 (free 36) -> 72; B's temp: room 4 free + 32 evictable
  // >= 8, V2; free 4 < 8 -> evict 4 of A: its leaf [24,32) (8 tokens) -> 64, +8 -> 72. Step 1 (n 33): 2 tokens,
  // free 4 -> 74; step 2: free 2 -> 76; step 3: free 0 -> evict 2: A's next node [16,24) -> A [16,32), 68, -> 70.
  // A: [24,32) from n 33, [16,32) from n 35; B: nothing evicted ([32,32)). At the last steps 16 of 64 prefix tokens
  // are on the host, A partly.
  const std::vector<V2RequestSteps> reqs = {{1, 33, 3}, {2, 33, 3}};
  const V2SessionPools pools{76, 0, -1, 8};
  const V2Schedule cur = plan_v2_session(reqs, 8, 4, V2Coordinator::kCurrent, pools);
  REQUIRE(cur.phases.at(1).size() == 2);
  CHECK(cur.phases.at(1)[0].from_n == 33);
  CHECK(cur.phases.at(1)[0].evicted_begin == 24);
  CHECK(cur.phases.at(1)[0].evicted_end == 32);
  CHECK(cur.phases.at(1)[0].fresh_buffer);
  CHECK(cur.phases.at(1)[1].from_n == 35);
  CHECK(cur.phases.at(1)[1].evicted_begin == 16);
  CHECK_FALSE(cur.phases.at(1)[1].fresh_buffer);
  REQUIRE(cur.phases.at(2).size() == 1);
  CHECK(cur.phases.at(2)[0].evicted_begin == 32);
  CHECK(cur.counts.admissions[static_cast<size_t>(V2Admit::kV2)] == 2);
  CHECK(cur.counts.fallbacks() == 0);
  CHECK(cur.counts.retractions == 0);
  CHECK(cur.counts.prefix_tokens == 64);
  CHECK(cur.counts.evicted_tokens == 16);
  CHECK(cur.counts.v2_requests_partly_evicted == 1);
  int32_t index = -1;
  CHECK(cur.phase(1, 34, &index)->evicted_begin == 24);
  CHECK(index == 0);
  CHECK(cur.phase(1, 32) == nullptr);  // before its first step
  // Older: each prefix goes to the host whole at admission (A: 32 + 8 - 32 = 8 used, B the same): no pressure, both
  // [0,32) from n 33, every prefix token on the host, none partly.
  const V2Schedule old = plan_v2_session(reqs, 8, 4, V2Coordinator::kOlder, pools);
  for (const int64_t id : {1, 2}) {
    REQUIRE(old.phases.at(id).size() == 1);
    CHECK(old.phases.at(id)[0].evicted_begin == 0);
    CHECK(old.phases.at(id)[0].evicted_end == 32);
  }
  CHECK(old.counts.evicted_tokens == 64);
  CHECK(old.counts.v2_requests_partly_evicted == 0);
}

TEST_CASE("v2 session: a temp-buffer fallback, a retraction and the re-admission with a recomputed prefix") {
  // Temp buffer: pool 12, one request of an 8-token prompt, H 8: prefill 8, room 4 free + 0 evictable < 8 ->
  // standard (temp buffer), nothing evicted.
  const V2Schedule t = plan_v2_session({{5, 9, 1}}, 8, 4, V2Coordinator::kCurrent, {12, 0, -1, 8});
  CHECK(t.phases.at(5)[0].outcome == V2Admit::kTempBuffer);
  CHECK(t.phases.at(5)[0].evicted_end == 0);
  CHECK(t.counts.fallbacks() == 1);
  // Retraction: pool 20, page 4, H 8, nodes of 8. A: prompt 8 (n 9), 8 steps; B: prompt 4 (n 5), 8 steps.
  // A: prefill 8, tree 8 >= H: V2, temp 8 -> 16. B: prefill 4 -> 20; tree 4 < H: standard (shorter than H).
  // Step 1: 2 tokens, free 0 -> evict A's one node [0,8) -> 12, -> 14: A [0,8) on the host from n 9. Steps 2-4:
  // 16, 18, 20. Step 5: free 0, nothing evictable: retract the request with the fewest generated tokens, A and B
  // both 4, then the longer prompt: A (holds 8 - 8 + 8 + 4 = 12) -> 8, B's token -> 9. B's steps 6-8 -> 12, B
  // done -> 0. A comes back with prefill 12 (8 prompt + 4 generated): tree 12 (3 pages) >= 8: V2, temp 8 -> 20;
  // its step (n 13): free 0 -> evict 1 -> the leaf node [8,12) (4 tokens) -> 16, -> 17. A: [8,12) from n 13, a
  // fresh buffer; 4 of its 12 prefix tokens on the host at the end (partly).
  const V2Schedule r = plan_v2_session({{1, 9, 8}, {2, 5, 8}}, 8, 4, V2Coordinator::kCurrent, {20, 0, -1, 8});
  const auto& a = r.phases.at(1);
  REQUIRE(a.size() == 2);
  CHECK(a[0].from_n == 9);
  CHECK(a[0].evicted_begin == 0);
  CHECK(a[0].evicted_end == 8);
  CHECK(a[1].from_n == 13);
  CHECK(a[1].outcome == V2Admit::kV2);
  CHECK(a[1].evicted_begin == 8);
  CHECK(a[1].evicted_end == 12);
  CHECK(a[1].fresh_buffer);
  CHECK(r.phases.at(2).at(0).outcome == V2Admit::kShorterThanBuffer);
  CHECK(r.counts.retractions == 1);
  CHECK(r.counts.readmissions == 1);
  CHECK(r.counts.admissions[static_cast<size_t>(V2Admit::kV2)] == 2);
  CHECK(r.counts.fallbacks() == 1);
  CHECK(r.counts.prefix_tokens == 12);
  CHECK(r.counts.evicted_tokens == 4);
  CHECK(r.counts.v2_requests_partly_evicted == 1);
  // A pool that cannot hold a request alone is an error naming it.
  CHECK_THROWS_AS(plan_v2_session({{9, 40, 1}}, 8, 4, V2Coordinator::kCurrent, {20, 0, -1, 8}), Error);
}

TEST_CASE("hisparse-v2 policy: follows the schedule; the re-admission empties the buffer") {
  // Request 7: [0,8) on the host from n 9; re-admitted at n 13 with [8,12) on the host and a fresh buffer.
  // n 9, T = [3, 5, 8, -1]: 3 and 5 load into slots 0, 1; 8 resident. n 13, T = [3, 9, 12, -1]: 3 is now resident
  // (before the evicted tail), 12 is past the prefix; 9 loads into slot 0 of the emptied buffer (without the restart
  // slots 0 and 1 would still hold 3 and 5, and 9 would take the empty slot 2).
  auto schedule = std::make_shared<V2Schedule>();
  schedule->phases[7] = {{9, V2Admit::kV2, 0, 8, true}, {13, V2Admit::kV2, 8, 12, true}};
  auto policy = make_policy("hisparse-v2:4:current");
  policy->use_v2_schedule(schedule);
  policy->reset(8, InitialState::kEmpty);
  SwapInScratch scratch;
  SwapInPlan plan;
  const std::vector<int32_t> t0 = {3, 5, 8, -1}, t1 = {3, 9, 12, -1};
  policy->step({t0.data(), 4, 9, 4, nullptr, 1}, {7, 0, 0}, plan, scratch);
  CHECK(plan.slot_of == std::vector<int32_t>{0, 1, 8, -1});
  policy->step({t1.data(), 4, 13, 4, nullptr, 1}, {7, 0, 1}, plan, scratch);
  CHECK(plan.slot_of == std::vector<int32_t>{8, 0, 8, -1});
  CHECK(plan.counters.misses == 1);
  CHECK(std::vector<int32_t>(policy->slot_token(), policy->slot_token() + 8) ==
        std::vector<int32_t>{9, -1, -1, -1, -1, -1, -1, -1});
  // A request the schedule does not know is an error, not a silent per-request rule.
  policy->reset(8, InitialState::kEmpty);
  CHECK_THROWS_AS(policy->step({t0.data(), 4, 9, 4, nullptr, 1}, {8, 0, 0}, plan, scratch), Error);
}
