// @brief Unit tests: PagedTokenToKVPoolAllocator patterns written out, and the HiSparse logical/device pair.
#include <doctest/doctest.h>

#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;
using V = std::vector<int64_t>;

TEST_CASE("PagedTokenToKVPoolAllocator: alloc_extend and alloc_decode page patterns") {
  // 32 tokens, page 4: pages 1..8 (page 0 = tokens 0..3 is reserved), free list [1..8].
  PagedTokenToKVPoolAllocator a(32, 4);
  // A: 0 → 6 tokens: one whole new page (1: 4..7) and a new partial page (2: 8, 9).
  // B: 0 → 3 tokens: a new partial page (3: 12..14).
  CHECK(a.alloc_extend({{0, 6, -1, 0}, {0, 3, -1, 1}}) == V{4, 5, 6, 7, 8, 9, 12, 13, 14});
  // A: 6 → 11 from last_loc 9: fill its partial page (10, 11), no whole page, new partial page 4 (16..18).
  // B: 3 → 4 from last_loc 14: fills its partial page (15) and needs no new page.
  CHECK(a.alloc_extend({{6, 11, 9, 0}, {3, 4, 14, 1}}) == V{10, 11, 16, 17, 18, 15});
  // Decode: A 11 → 12 reuses its partial page (19); B 4 → 5 starts a new page (5: 20).
  CHECK(a.alloc_decode({{12, 18, 0}, {5, 15, 1}}) == V{19, 20});
  // A 12 → 13: its page is full, a new page (6: 24).
  CHECK(a.alloc_decode({{13, 19, 0}}) == V{24});
  CHECK(a.free_list() == V{7, 8});
  CHECK(a.available_size() == 8);
  CHECK(a.used_size() == 18);
  a.check_invariants();
  // Freeing A returns its pages 1, 2, 4, 6 to the staged list (need_sort): available grows, free list does not.
  a.free(V{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 24}, 0);
  CHECK(a.available_size() == 24);
  CHECK(a.free_list() == V{7, 8});
  // C: 0 → 8 needs 2 pages; the over-estimate 8/4 + 1 + 1 = 4 > 2 free pages triggers merge + sort.
  CHECK(a.alloc_extend({{0, 8, -1, 2}}) == V{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(a.free_list() == V{4, 6, 7, 8});
  a.check_invariants();
}

TEST_CASE("PagedTokenToKVPoolAllocator: whole-page extend and page-aligned alloc") {
  PagedTokenToKVPoolAllocator a(16, 4);  // pages 1..4
  // 0 → 8: two whole pages, no partial page.
  CHECK(a.alloc_extend({{0, 8, -1, 0}}) == V{4, 5, 6, 7, 8, 9, 10, 11});
  // 8 → 9 from last_loc 11 (a page end): a new page (3: 12).
  CHECK(a.alloc_extend({{8, 9, 11, 0}}) == V{12});
  CHECK(a.alloc(4, 1) == V{16, 17, 18, 19});
  CHECK_THROWS_AS(a.alloc(3, 1), Error);              // not a page multiple
  CHECK_THROWS_AS(a.alloc(4, 1), OutOfMemoryError);  // no page left
  CHECK(a.claim_page_tail(12, 0) == V{13, 14, 15});
  CHECK_THROWS_AS(a.claim_page_tail(12, 0), Error);  // already claimed
}

TEST_CASE("PagedTokenToKVPoolAllocator: without need_sort released pages go to the front, sorted") {
  PagedTokenToKVPoolAllocator a(32, 4, /*need_sort=*/false);
  a.alloc_extend({{0, 8, -1, 0}, {0, 4, -1, 1}});  // A: pages 1, 2; B: page 3
  a.free(V{8, 4, 9, 10, 11, 5, 6, 7}, 0);          // releases pages 1, 2 (sorted)
  CHECK(a.free_list() == V{1, 2, 4, 5, 6, 7, 8});
}

TEST_CASE("PagedTokenToKVPoolAllocator: a page returns only when all its tokens are free") {
  PagedTokenToKVPoolAllocator a(16, 4);
  a.alloc_extend({{0, 3, -1, 0}});  // page 1: 4, 5, 6 (7 reserved for the request)
  a.free(V{4, 5}, 0);
  CHECK(a.page_owner(1) == 0);
  CHECK(a.available_size() == 12);
  a.free(V{6}, 0);
  CHECK(a.page_owner(1) == kNoOwner);
  CHECK(a.available_size() == 16);
  a.check_invariants();
}

TEST_CASE("PagedTokenToKVPoolAllocator: misuse is an error and changes nothing") {
  PagedTokenToKVPoolAllocator a(16, 4);
  a.alloc_extend({{0, 2, -1, 0}, {0, 2, -1, 1}});  // A: 4, 5; B: 8, 9
  CHECK_THROWS_AS(a.alloc_extend({{2, 3, 8, 0}}), Error);   // last_loc in B's page
  CHECK_THROWS_AS(a.alloc_extend({{2, 3, 6, 0}}), Error);   // offset does not match prefix_len
  CHECK_THROWS_AS(a.alloc_extend({{2, 3, 5, 0}, {2, 3, 5, 0}}), Error);  // same slot twice in a batch
  CHECK_THROWS_AS(a.alloc_decode({{3, 4, 0}}), Error);      // last_loc is not token 1
  CHECK_THROWS_AS(a.alloc_extend({{0, 9, -1, 2}}), OutOfMemoryError);  // 3 pages, 2 left
  CHECK_THROWS_AS(a.free(V{8}, 0), Error);                  // B's token
  CHECK_THROWS_AS(a.free(V{3}, 0), Error);                  // reserved page
  CHECK_THROWS_AS(a.free(V{20}, 0), Error);                 // out of range
  CHECK_THROWS_AS(a.free(V{4, 4}, 0), Error);               // twice in one call
  CHECK(a.used_size() == 4);
  CHECK(a.available_size() == 8);
  a.check_invariants();
  CHECK(a.alloc_extend({{2, 3, 5, 0}}) == V{6});  // the failed batch left slot 6 free
  a.free(V{4, 5, 6}, 0);
  CHECK_THROWS_AS(a.free(V{4}, 0), Error);  // double free
  a.free(V{8, 9}, 1);
  CHECK(a.owned_indices().empty());
}

TEST_CASE("HiSparseTokenToKVPoolAllocator: pair allocation, mapping and device buffers") {
  // device 16 tokens (pages 1..4), ratio 3 → logical 48 tokens (pages 1..12), page 4.
  HiSparseTokenToKVPoolAllocator a(16, 4, 3);
  CHECK(a.size() == 48);
  CHECK(a.available_size() == 16);
  const V l0 = a.alloc_extend({{0, 6, -1, 0}});
  CHECK(l0 == V{4, 5, 6, 7, 8, 9});
  for (size_t i = 0; i < l0.size(); ++i) CHECK(a.translate(l0[i]) == static_cast<int64_t>(4 + i));
  CHECK(a.translate(-1) == -1);
  // Chunked prefill continues the device partial page through the mapping of last_loc.
  CHECK(a.alloc_extend({{6, 7, 9, 0}}) == V{10});
  CHECK(a.translate(10) == 10);
  // Decode and logical-only extends take no device rows.
  CHECK(a.alloc_decode({{8, 10, 0}}) == V{11});
  CHECK(a.translate(11) == 0);
  const V l1 = a.alloc_logical_only({{0, 5, -1, 1}});
  CHECK(l1 == V{12, 13, 14, 15, 16});
  CHECK(a.device().used_size() == 7);
  CHECK(a.available_size() == 8);  // device: 2 pages left; logical: 9 pages left
  a.check_invariants();

  // Buffer of 8 for request 0 (7 mapped rows 4..10): pad page 2 (11), no new page; mapping cleared.
  const V b0 = a.alloc_device_buffer(V{4, 5, 6, 7, 8, 9, 10}, 8, 0);
  CHECK(b0 == V{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(a.mapped_indices().empty());
  // Buffer of 4 for request 1 (no mapped rows): one fresh page (3: 12..15).
  CHECK(a.alloc_device_buffer(l1, 4, 1) == V{12, 13, 14, 15});
  CHECK_THROWS_AS(a.alloc_device_buffer(l1, 8, 1), OutOfMemoryError);  // needs 8 fresh, 4 left
  a.check_invariants();
  a.free_hisparse_indices(b0, 0);
  a.free(V{4, 5, 6, 7, 8, 9, 10, 11}, 0);
  a.free_hisparse_indices(V{12, 13, 14, 15, 0}, 1);  // entries <= 0 are skipped
  a.free(l1, 1);
  CHECK(a.logical().owned_indices().empty());
  CHECK(a.device().owned_indices().empty());
  a.check_invariants();
}

TEST_CASE("HiSparseTokenToKVPoolAllocator: a buffer smaller than the prefill frees the extra rows") {
  HiSparseTokenToKVPoolAllocator a(32, 4, 2);
  const V l = a.alloc_extend({{0, 10, -1, 0}});  // device rows 4..13 (pages 1, 2, 3)
  CHECK(a.device().used_size() == 10);
  CHECK(a.alloc_device_buffer(l, 8, 0) == V{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(a.device().used_size() == 8);
  CHECK(a.device().page_owner(3) == kNoOwner);
  // Freeing logical indices whose mapping is gone frees no device row.
  a.free(l, 0);
  CHECK(a.device().used_size() == 8);
  a.check_invariants();
}

TEST_CASE("HiSparseTokenToKVPoolAllocator: out of memory when either pool is short") {
  HiSparseTokenToKVPoolAllocator a(8, 4, 4);  // device pages 1, 2; logical pages 1..8
  a.alloc_extend({{0, 8, -1, 0}});
  CHECK_THROWS_AS(a.alloc_extend({{0, 1, -1, 1}}), OutOfMemoryError);  // device full, logical not
  CHECK(a.alloc_logical_only({{0, 1, -1, 1}}) == V{12});
  a.check_invariants();
}
