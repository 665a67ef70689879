// @brief The HiSparse V2 swap-in (cpu_ref/swap_in_v2.h, docs/swap_in.md "HiSparse V2"): hand-worked steps for the
// three sources (resident page, buffer hit, host copy) and both kinds of free slot, the refused inputs, and random
// traces against a literal transcription of SGLang's swap_in_plan_kernel.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in_v2.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

namespace {

struct Expect {
  std::vector<int32_t> selected;
  int32_t n;
  std::vector<int32_t> slot_of;
  std::vector<int32_t> load_slot;
  std::vector<int32_t> slot_pos_after;
  int64_t resident, hits, misses;
};

}  // namespace

TEST_CASE("hisparse-v2: evicted prefix = the page-aligned prompt; V2's buffer-size rule") {
  // A first step at n0 holds a prompt of n0 - 1 tokens; its whole pages are the tree-owned, evictable prefix.
  CHECK(v2_evicted_end(21, 4) == 20);
  CHECK(v2_evicted_end(20, 4) == 16);  // 19 prompt tokens: 4 whole pages
  CHECK(v2_evicted_end(4, 4) == 0);    // 3 prompt tokens: no whole page, nothing evictable
  CHECK(v2_evicted_end(1, 64) == 0);
  CHECK(v2_buffer_size_ok(4096, 2048, 64));
  CHECK_FALSE(v2_buffer_size_ok(3072, 2048, 64));  // not a power of two
  CHECK_FALSE(v2_buffer_size_ok(1024, 2048, 64));  // < top_k
  CHECK_FALSE(v2_buffer_size_ok(32, 16, 64));      // not a multiple of the page
}

TEST_CASE("hisparse-v2 admission: current SGLang runs a prefix shorter than the buffer as standard, older did not") {
  // The case: a 4,043-token prompt, so the first decode step has n0 = 4044; page 64 gives
  // floor(4043 / 64) = 63 whole pages, evicted_end 63 * 64 = 4032. With H = 4096 that prefix is shorter than the
  // buffer: current SGLang (09f8170, admit_request: tree_len < temp_slot_tokens) runs the request as standard, so
  // nothing is evicted (end 0); the older coordinator (ca0edd9) evicts [0, 4032).
  CHECK(v2_evicted_end(4044, 64) == 4032);
  CHECK(v2_admitted_evicted_end(4044, 64, 4096, V2Coordinator::kCurrent) == 0);
  CHECK(v2_admitted_evicted_end(4044, 64, 4096, V2Coordinator::kOlder) == 4032);
  // The gate's edge: a 4,096-token prompt gives a prefix of exactly H = 4096 tokens, not shorter: V2 under both.
  CHECK(v2_admitted_evicted_end(4097, 64, 4096, V2Coordinator::kCurrent) == 4096);
  // A smaller buffer (H = 2048 < 4032): V2 under both rules.
  CHECK(v2_admitted_evicted_end(4044, 64, 2048, V2Coordinator::kCurrent) == 4032);
  // Under a page: standard under both.
  CHECK(v2_admitted_evicted_end(64, 64, 64, V2Coordinator::kOlder) == 0);

  // Its first step through the policy, K = 2048: 1,925 selected positions below 4032 (0 .. 1924), the 12 prompt
  // and newest positions at or past 4032 (4032 .. 4043), 111 padding lanes (1925 + 12 + 111 = 2048).
  // Older: the 1,925 evicted positions miss into the empty buffer, the 12 are resident device pages.
  // Current: standard, so all 1,937 are resident and nothing misses.
  std::vector<int32_t> sel;
  for (int32_t t = 0; t < 1925; ++t) sel.push_back(t);
  for (int32_t t = 4032; t < 4044; ++t) sel.push_back(t);
  sel.resize(2048, -1);
  for (const char* name : {"hisparse-v2", "hisparse-v2:current", "hisparse-v2:64:older"}) {
    auto p = make_policy(name);
    p->reset(4096, InitialState::kEmpty);
    SwapInScratch scratch;
    SwapInPlan plan;
    p->step({sel.data(), 2048, 4044, 2048, nullptr, 656}, {}, plan, scratch);
    const bool older = std::string(name).find("older") != std::string::npos;
    INFO(name);
    CHECK(plan.counters.misses == (older ? 1925 : 0));
    CHECK(plan.counters.newest_hits == (older ? 12 : 1937));
    CHECK(plan.counters.hits == 0);
    CHECK(plan.counters.h2d_bytes == (older ? 1925 * 656 : 0));
  }
}

TEST_CASE("hisparse-v2: top_k must be a power of two and a multiple of the page (the kernel's rules)") {
  // The coordinator asserts top_k % page == 0; the plan kernel's lanes are tl.arange(0, TOPK), a power of two.
  CHECK(v2_top_k_ok(2048, 64));
  CHECK(v2_top_k_ok(64, 64));
  CHECK_FALSE(v2_top_k_ok(16, 64));  // a power of two, not a multiple of 64
  CHECK_FALSE(v2_top_k_ok(40, 8));   // a multiple of 8, not a power of two
  CHECK_FALSE(v2_top_k_ok(96, 32));  // a multiple of 32, not a power of two
  // The refusal names the rule, the value and the fix: the smallest power of two >= max(top_k, page).
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2", 16), doctest::Contains("top_k 16"), Error);
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2", 16), doctest::Contains("multiple of the page size 64"),
                       Error);
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2", 16), doctest::Contains("with top_k 64"), Error);
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2:older", 40), doctest::Contains("power of two"), Error);
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2:8", 40), doctest::Contains("with top_k 64"), Error);
  CHECK_THROWS_WITH_AS(check_policy_top_k("hisparse-v2:48", 96), doctest::Contains("not a power of two"), Error);
  CHECK_NOTHROW(check_policy_top_k("hisparse-v2:4", 16));
  CHECK_NOTHROW(check_policy_top_k("sglang-lru", 40));  // other policies have no such rule
}

TEST_CASE("hisparse-v2: the coordinator selector in the policy name") {
  // "hisparse-v2:RULES" and "hisparse-v2:P:RULES" pick the rules; a replay default fills in only where none is named.
  CHECK(parse_hisparse_v2_arg("older").rules == V2Coordinator::kOlder);
  CHECK(parse_hisparse_v2_arg("older").page == 64);
  CHECK(parse_hisparse_v2_arg("16:current").page == 16);
  CHECK(parse_hisparse_v2_arg("16").rules_given == false);
  CHECK(with_v2_coordinator("hisparse-v2", V2Coordinator::kOlder) == "hisparse-v2:64:older");
  CHECK(with_v2_coordinator("hisparse-v2:4", V2Coordinator::kOlder) == "hisparse-v2:4:older");
  CHECK(with_v2_coordinator("hisparse-v2:current", V2Coordinator::kOlder) == "hisparse-v2:current");
  CHECK(with_v2_coordinator("sglang-lru", V2Coordinator::kOlder) == "sglang-lru");
  CHECK_THROWS_WITH_AS(make_policy("hisparse-v2:newest"), doctest::Contains("expected current"), Error);
  CHECK_THROWS_WITH_AS(make_policy("hisparse-v2:4:"), doctest::Contains("expected current"), Error);
  CHECK_THROWS_WITH_AS(make_policy("hisparse-v2::older"), doctest::Contains("positive page size"), Error);
}

TEST_CASE("hisparse-v2: hand-worked steps (H = 8, K = 4, page 4, first n = 21: positions 0..19 evicted)") {
  // Step 0: 20 is resident (slot H = 8); 3 and 7 miss into the empty slots 0 and 1.
  // Step 1: 7 hits slot 1; 21 is resident; 11 and 12 take the EMPTY slots 2 and 3 although slot 0 is stale
  //         (free slots: empty first).
  // Step 2: four misses fill the last empty slots 4..7.
  // Step 3: 14 hits slot 5; 22 is resident although it is not the newest token (23); 0 and 1 take the STALE slots 0
  //         and 1, in slot order.
  // Step 4: 15 hits slot 6; 3 and 19 take stale slots 0 and 1 again: slot order, not recency (an LRU would evict
  //         11 and 12, untouched since step 1).
  const std::vector<Expect> steps = {
      {{20, 3, 7, -1}, 21, {8, 0, 1, -1}, {0, 1}, {3, 7, -1, -1, -1, -1, -1, -1}, 1, 0, 2},
      {{7, 11, 21, 12}, 22, {1, 2, 8, 3}, {2, 3}, {3, 7, 11, 12, -1, -1, -1, -1}, 1, 1, 2},
      {{13, 14, 15, 16}, 23, {4, 5, 6, 7}, {4, 5, 6, 7}, {3, 7, 11, 12, 13, 14, 15, 16}, 0, 0, 4},
      {{14, 0, 22, 1}, 24, {5, 0, 8, 1}, {0, 1}, {0, 1, 11, 12, 13, 14, 15, 16}, 1, 1, 2},
      {{3, 15, 24, 19}, 25, {0, 6, 8, 1}, {0, 1}, {3, 19, 11, 12, 13, 14, 15, 16}, 1, 1, 2},
  };
  auto p = make_policy("hisparse-v2:4");
  p->reset(8, InitialState::kIdentity);  // V2 ignores it: admission clears the slot map
  SwapInScratch scratch;
  SwapInPlan plan;
  for (size_t j = 0; j < steps.size(); ++j) {
    const Expect& e = steps[j];
    INFO("step " << j);
    p->step({e.selected.data(), 4, e.n, 4, nullptr, 10}, {0, 0, static_cast<int64_t>(j)}, plan, scratch);
    CHECK(plan.slot_of == e.slot_of);
    CHECK(plan.load_slot == e.load_slot);
    CHECK(std::vector<int32_t>(p->slot_token(), p->slot_token() + 8) == e.slot_pos_after);
    CHECK(plan.counters.newest_hits == e.resident);
    CHECK(plan.counters.hits == e.hits);
    CHECK(plan.counters.misses == e.misses);
    CHECK(plan.counters.h2d_bytes == 10 * e.misses);
    CHECK_FALSE(plan.counters.fast_path);
  }
}

TEST_CASE("hisparse-v2: a prompt shorter than a page is all resident; refused inputs leave the state unchanged") {
  SwapInScratch scratch;
  SwapInPlan plan;
  // 3 prompt tokens, page 4: no whole page, so every position is a resident device page and nothing loads.
  std::vector<int32_t> pos(8, -1);
  const std::vector<int32_t> sel = {0, 1, 2, 3};
  swap_in_v2({pos.data(), 8}, {sel.data(), 4, 4, 4, v2_evicted_end(4, 4), 4, nullptr, 1}, {}, plan, scratch);
  CHECK(plan.slot_of == std::vector<int32_t>{8, 8, 8, 8});
  CHECK(plan.counters.newest_hits == 4);
  CHECK(plan.counters.misses == 0);
  CHECK(pos == std::vector<int32_t>(8, -1));
  // A buffer size V2 refuses (6: not a power of two).
  std::vector<int32_t> pos6(6, -1);
  CHECK_THROWS_WITH_AS(
      swap_in_v2({pos6.data(), 6}, {sel.data(), 4, 30, 4, 20, 2, nullptr, 1}, {3, 1, 0}, plan, scratch),
      doctest::Contains("device_buffer_size H = 6 must be a power of two"), Error);
  // An evicted entry without a host copy (V2 would mask it; the simulator refuses): nothing changes.
  std::vector<int64_t> host(30, 5);
  host[2] = -1;
  CHECK_THROWS_WITH_AS(
      swap_in_v2({pos.data(), 8}, {sel.data(), 4, 30, 4, 20, 4, host.data(), 1}, {3, 1, 0}, plan, scratch),
      doctest::Contains("token 2 of request 3, layer 1 has no host copy"), Error);
  CHECK(pos == std::vector<int32_t>(8, -1));
  // The contract's shared validation (here: a duplicate).
  const std::vector<int32_t> dup = {5, 5};
  CHECK_THROWS_WITH_AS(swap_in_v2({pos.data(), 8}, {dup.data(), 2, 30, 4, 20, 4, nullptr, 1}, {}, plan, scratch),
                       doctest::Contains("selected twice"), Error);
}

namespace {

/// SGLang's swap_in_plan_kernel transcribed literally (flags, ranks by prefix count), positions instead of lanes.
void naive_v2(std::vector<int32_t>& slot_pos, const std::vector<int32_t>& sel, int32_t E, std::vector<int32_t>& slot_of,
              std::vector<int32_t>& loads) {
  const int32_t H = static_cast<int32_t>(slot_pos.size());
  std::vector<int> retained(H, 0);
  slot_of.assign(sel.size(), -1);
  loads.clear();
  for (size_t k = 0; k < sel.size(); ++k) {
    if (sel[k] < 0) continue;
    if (sel[k] >= E) {
      slot_of[k] = H;
      continue;
    }
    for (int32_t s = 0; s < H; ++s)
      if (slot_pos[s] == sel[k]) slot_of[k] = s, retained[s] = 1;
  }
  std::vector<int32_t> free_slots;
  for (int32_t s = 0; s < H; ++s)
    if (!retained[s] && slot_pos[s] < 0) free_slots.push_back(s);
  for (int32_t s = 0; s < H; ++s)
    if (!retained[s] && slot_pos[s] >= 0) free_slots.push_back(s);
  size_t m = 0;
  for (size_t k = 0; k < sel.size(); ++k) {
    if (sel[k] < 0 || slot_of[k] >= 0) continue;
    slot_of[k] = free_slots.at(m++);
    loads.push_back(slot_of[k]);
    slot_pos[slot_of[k]] = sel[k];  // a free slot is never a retained one, so later hits are unaffected
  }
}

}  // namespace

TEST_CASE("hisparse-v2: random traces match the literal transcription of SGLang's plan kernel") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed * 6151);
    const int32_t page = 1 << (rng() % 3);                      // 1, 2, 4
    const int32_t K = 1 + static_cast<int32_t>(rng() % 16);
    int32_t H = page;
    while (H < K) H *= 2;
    H <<= rng() % 3;
    const int32_t n0 = 1 + static_cast<int32_t>(rng() % (4 * H));
    const V2Coordinator rules = seed % 4 < 2 ? V2Coordinator::kCurrent : V2Coordinator::kOlder;
    const int32_t E = v2_admitted_evicted_end(n0, page, H, rules);
    auto p = make_policy("hisparse-v2:" + std::to_string(page) + ":" + v2_coordinator_name(rules));
    p->reset(H, InitialState::kEmpty);
    std::vector<int32_t> ref(H, -1), ref_slot_of, ref_loads;
    SwapInScratch scratch(seed % 2 ? SwapInScratch::kDirectSpan : 0);  // both position tables
    SwapInPlan plan;
    INFO("seed " << seed << " page " << page << " K " << K << " H " << H << " E " << E << " rules "
                  << v2_coordinator_name(rules));
    for (int32_t j = 0; j < 60; ++j) {
      const int32_t n = n0 + j;
      std::set<int32_t> chosen;
      std::vector<int32_t> sel;
      for (int32_t i = 0; i < K; ++i) {
        // Mostly old positions from a small pool (reuse), some recent ones, some padding.
        const int32_t t = rng() % 5 == 0 ? -1
                          : rng() % 3   ? static_cast<int32_t>(rng() % std::min(n, 2 * H + 1))
                                        : n - 1 - static_cast<int32_t>(rng() % std::min(n, 4));
        if (t < 0 || chosen.insert(t).second) sel.push_back(t);
      }
      p->step({sel.data(), static_cast<int32_t>(sel.size()), n, K, nullptr, 1}, {0, 0, j}, plan, scratch);
      naive_v2(ref, sel, E, ref_slot_of, ref_loads);
      REQUIRE(plan.slot_of == ref_slot_of);
      REQUIRE(plan.load_slot == ref_loads);
      REQUIRE(std::vector<int32_t>(p->slot_token(), p->slot_token() + H) == ref);
      const SwapInCounters& c = plan.counters;
      REQUIRE(c.selected == c.newest_hits + c.hits + c.misses);
    }
  }
}
