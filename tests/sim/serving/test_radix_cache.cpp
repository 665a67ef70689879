// @brief The radix prefix cache (sim/serving/prefix/): page-granular matching with node splits, LRU eviction of
// unlocked leaves (a parent left childless joining them), locks along a running request's path, a prompt's page keys
// from its prefix blocks, and a hand-built two-turn session that hits exactly its shared pages.
#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "sim/serving/prefix/prefix_pages.h"
#include "sim/serving/prefix/prefix_replay.h"
#include "sim/serving/prefix/radix_cache.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("radix cache: the longest cached prefix, in pages; a match ending inside a node splits it") {
  RadixCache c(64);
  // Expected: nothing cached matches nothing; after inserting 1,2,3,4 the query 1,2,9 matches 2 pages, and the
  // split keeps 4 pages in the tree (1,2 then 3,4), all evictable.
  CHECK(c.match({1, 2, 3}, 0).pages == 0);
  CHECK(c.insert({1, 2, 3, 4}, 1) == 0);
  const RadixCache::Match m = c.match({1, 2, 9}, 2);
  CHECK(m.pages == 2);
  CHECK(m.last != c.root());
  CHECK(c.total_pages() == 4);
  CHECK(c.evictable_pages() == 4);
  // Expected: inserting 1,2,5 finds its first 2 pages cached and adds 1 page.
  CHECK(c.insert({1, 2, 5}, 3) == 2);
  CHECK(c.total_pages() == 5);
  CHECK(c.match({1, 2, 5, 7}, 4).pages == 3);
  CHECK(c.match({1, 2, 3, 4}, 5).pages == 4);
}

TEST_CASE("radix cache: eviction frees unlocked leaves least recently used first, then parents left childless") {
  RadixCache c(16);
  c.insert({1, 2, 3}, 10);       // X: 3 pages
  c.insert({7, 8}, 20);          // Y: 2 pages
  c.match({1, 2, 3}, 30);        // X used after Y
  // Expected: asking for 1 page frees Y's whole leaf (2 pages, the least recently used); X stays.
  CHECK(c.evict(1) == 2);
  CHECK(c.total_pages() == 3);
  CHECK(c.match({7, 8}, 31).pages == 0);
  CHECK(c.match({1, 2, 3}, 32).pages == 3);
  // Two leaves under one parent: 1,2 → {3} and {4}; evicting 3 pages frees the older leaf, the newer one, then
  // the parent that is now a leaf (and stops once enough is freed).
  c.insert({1, 2, 4}, 40);       // splits X: 1,2 → 3 | 4
  CHECK(c.total_pages() == 4);
  CHECK(c.evict(2) == 2);        // leaf {3} (last used at 32) and leaf {4} (40): 1 page each
  CHECK(c.total_pages() == 2);
  CHECK(c.evict(10) == 2);       // the parent 1,2, a leaf now
  CHECK(c.total_pages() == 0);
}

TEST_CASE("radix cache: a running request's prefix is locked; unlocked it becomes evictable again") {
  RadixCache c(64);
  c.insert({1, 2, 3}, 1);
  c.insert({5, 6}, 2);
  const RadixCache::Match m = c.match({1, 2, 3}, 3);
  c.lock(m.last);
  // Expected: the 3 locked pages are protected; eviction can free only the other 2.
  CHECK(c.protected_pages() == 3);
  CHECK(c.evictable_pages() == 2);
  CHECK(c.evict(100) == 2);
  CHECK(c.total_pages() == 3);
  c.unlock(m.last);
  CHECK(c.protected_pages() == 0);
  CHECK(c.evict(100) == 3);
  // Expected: unlocking a node no request holds is an error, not a silent negative count.
  const RadixCache::Match again = c.match({9}, 4);
  CHECK(again.last == c.root());
  c.insert({9}, 5);
  const RadixCache::Match nine = c.match({9}, 6);
  CHECK_THROWS_AS(c.unlock(nine.last), hisparse::Error);
}

TEST_CASE("prompt pages: whole pages of each block, keyed by the block; a partial last page is not a key") {
  RequestSpec r;
  r.input_tokens = 1000;      // blocks of 512: a full block A, then 488 tokens of block B
  r.prefix_blocks = {11, 12};
  // Expected at 64-token pages: 8 pages of A and floor(488 / 64) = 7 of B, 15 keys; at page 1, 1000 keys.
  CHECK(prompt_pages(r, 512, 64).size() == 15);
  CHECK(prompt_pages(r, 512, 1).size() == 1000);
  // Expected: a page size that does not divide the block is refused by name.
  CHECK_THROWS_AS(prompt_pages(r, 512, 48), hisparse::Error);
  r.prefix_blocks.clear();
  CHECK(prompt_pages(r, 512, 64).empty());
}

TEST_CASE("a two-turn session hits exactly the pages its turns share") {
  // Turn 1: 1,024 tokens in two full blocks (A, B). Turn 2, 300 s later: the same two blocks, then 276 tokens of a
  // new block C (turn 1's answer and the next question). Another user's request shares only block A.
  Workload w;
  w.block_tokens = 512;
  w.requests = {RequestSpec{0, 0, 1024, 100, {1, 2}}, RequestSpec{1, 300'000'000'000, 1300, 100, {1, 2, 3}},
                RequestSpec{2, 400'000'000'000, 700, 100, {1, 4}}};
  const PrefixReplayResult r = replay_prefix_cache(w, PrefixReplayOptions{64, 0});
  // Expected: turn 1 hits nothing; turn 2 hits A and B, 16 pages = 1,024 tokens; the other user hits A's 8 pages =
  // 512 tokens. Hit rate (1,024 + 512) / (1,024 + 1,300 + 700).
  CHECK(r.requests == 3);
  CHECK(r.hit_tokens == 1024 + 512);
  CHECK(r.input_tokens == 3024);
  CHECK(r.hit_rate() == doctest::Approx(1536.0 / 3024.0));
  // Pages held: turn 1's 16, turn 2's 4 more (276 / 64 = 4 whole pages of C), the third request's 2 (188 / 64).
  CHECK(r.peak_pages == 16 + 4 + 2);
  // Expected with room for 16 pages only: turn 2 adds C's 4 pages and the cache evicts its only leaf, C (A and B lie
  // above it); the third request still finds A, adds 2 pages and the cache evicts the least recently used leaf, B
  // (last used at 300 s; the new pages at 400 s): 4 + 8 pages evicted, the same hits.
  const PrefixReplayResult small = replay_prefix_cache(w, PrefixReplayOptions{64, 16});
  CHECK(small.hit_tokens == 1024 + 512);
  CHECK(small.evicted_pages == 4 + 8);
  CHECK(small.peak_pages == 16);  // pages held after each request's eviction: never above the capacity
}
