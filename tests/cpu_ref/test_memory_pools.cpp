// @brief Unit tests: ReqToTokenPool, TokenToKVPoolAllocator (release list, sort on demand, errors) and HostPool.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;
using V = std::vector<int64_t>;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("ReqToTokenPool: slots, rows and misuse") {
  ReqToTokenPool pool(3, 8);
  // Slots come from the front of the free list, freed ones go to its back.
  CHECK(pool.alloc(2) == V{0, 1});
  pool.write(1, 2, V{7, 8, 9});
  CHECK(pool.read(1, 0, 5) == V{0, 0, 7, 8, 9});
  pool.free(0);
  CHECK(pool.alloc(2) == V{2, 0});
  CHECK(pool.available_size() == 0);
  CHECK_THROWS_AS(pool.alloc(1), OutOfMemoryError);
  pool.free(1);
  CHECK(message_of([&] { pool.free(1); }).find("double free") != std::string::npos);
  CHECK_THROWS_AS(pool.free(3), Error);
  CHECK_THROWS_AS(pool.write(0, 6, V{1, 2, 3}), Error);  // past max_context_len
  CHECK_THROWS_AS(pool.read(1, 0, 1), Error);            // slot not in use
  CHECK(pool.slots_in_use() == V{0, 2});
  // A reused slot starts zeroed.
  CHECK(pool.alloc_one() == 1);
  CHECK(pool.read(1, 0, 5) == V{0, 0, 0, 0, 0});
}

TEST_CASE("TokenToKVPoolAllocator: slot 0 reserved, release list merged and sorted only when short") {
  TokenToKVPoolAllocator a(8, /*need_sort=*/true);
  CHECK(a.available_size() == 8);
  CHECK(a.alloc(3, 0) == V{1, 2, 3});
  CHECK(a.alloc(2, 1) == V{4, 5});
  a.free(V{2, 1}, 0);  // to the release list
  CHECK(a.available_size() == 5);
  CHECK(a.alloc(3, 1) == V{6, 7, 8});  // the free list suffices: no merge
  CHECK(a.alloc(1, 2) == V{1});        // short: merge + sort → [1, 2]
  CHECK(a.alloc(1, 2) == V{2});
  CHECK(a.available_size() == 0);
  a.check_invariants();
  CHECK(a.owned_indices().size() == 8);
}

TEST_CASE("TokenToKVPoolAllocator: without need_sort freed indices append to the free list") {
  TokenToKVPoolAllocator a(8, /*need_sort=*/false);
  CHECK(a.alloc(3) == V{1, 2, 3});
  a.free(V{2, 1});
  CHECK(a.alloc(4) == V{4, 5, 6, 7});
  CHECK(a.alloc(3) == V{8, 2, 1});
}

TEST_CASE("TokenToKVPoolAllocator: free groups defer reuse but catch double frees at once") {
  TokenToKVPoolAllocator a(4);
  const V x = a.alloc(4, 0);
  a.free_group_begin();
  a.free(V{1, 2}, 0);
  CHECK(a.pending_in_group() == 2);
  CHECK(a.available_size() == 0);
  CHECK_THROWS_AS(a.free(V{1}, 0), Error);
  CHECK_THROWS_AS(a.alloc(1, 0), OutOfMemoryError);
  a.free_group_end();
  CHECK(a.available_size() == 2);
  CHECK(a.alloc(2, 0) == V{1, 2});
  a.check_invariants();
}

TEST_CASE("TokenToKVPoolAllocator: every misuse is an error and changes nothing") {
  TokenToKVPoolAllocator a(6);
  a.alloc(2, 0);  // 1, 2
  a.alloc(2, 1);  // 3, 4
  a.set_evictable_tokens(5);
  const std::string oom = message_of([&] { a.alloc(3, 0); });
  CHECK(oom.find("requested 3 tokens") != std::string::npos);
  CHECK(oom.find("available 2 tokens") != std::string::npos);
  CHECK(oom.find("evictable 5 tokens") != std::string::npos);
  CHECK(message_of([&] { a.free(V{1, 3}, 0); }).find("held by owner 1") != std::string::npos);
  CHECK(message_of([&] { a.free(V{1, 1}, 0); }).find("twice") != std::string::npos);
  CHECK(message_of([&] { a.free(V{0}, 0); }).find("reserved") != std::string::npos);
  CHECK(message_of([&] { a.free(V{7}, 0); }).find("out of range") != std::string::npos);
  CHECK(message_of([&] { a.free(V{5}, 0); }).find("double free") != std::string::npos);
  // Nothing above changed the state.
  CHECK(a.available_size() == 2);
  CHECK(a.owner_of(1) == 0);
  CHECK(a.owner_of(3) == 1);
  a.check_invariants();
  a.free(V{1, 2}, 0);
  a.free(V{3, 4}, 1);
  CHECK(a.owned_indices().empty());
}

TEST_CASE("HostPool: size rounded up to pages, layer-first addresses, req_to_host") {
  // 10 × 3 = 30 tokens → 32 (8 pages of 4); 2 layers of 16-byte rows: layer_bytes = 32 × 16 = 512.
  HostPool host(10, 3, 4, 2, 16, /*max_requests=*/2, /*max_context_len=*/20, /*backed=*/true);
  CHECK(host.size() == 32);
  CHECK(host.layout().layer_bytes() == 512);
  CHECK(host.row_address(1, 5) - host.row_address(0, 0) == 512 + 5 * 16);
  CHECK(host.host_loc(0, 0) == -1);
  // Request 0 gets pages 0, 1 for positions 0..5; request 1 page 2; request 0 page 3 at position 8.
  CHECK(host.assign(0, 0, 6) == V{0, 1, 2, 3, 4, 5});
  CHECK(host.allocated_len(0) == 8);
  CHECK(host.host_loc(0, 6) == -1);  // allocated page, no copy yet
  CHECK(host.assign(1, 0, 1) == V{8});
  CHECK(host.assign(0, 6, 3) == V{6, 7, 12});
  CHECK(host.available_size() == 16);
  CHECK_THROWS_AS(host.assign(0, 3, 1), Error);   // already has a copy
  CHECK_THROWS_AS(host.assign(1, 5, 1), Error);   // hole: allocated_len is 4
  CHECK_THROWS_AS(host.assign(1, 4, 17), Error);  // past max_context_len
  std::vector<uint8_t> row(16), back(16);
  for (int i = 0; i < 16; ++i) row[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7 + 1);
  host.write_row(1, 12, row.data());
  host.read_row(1, 12, back.data());
  CHECK(back == row);
  CHECK_THROWS_AS(host.write_row(0, 20, row.data()), Error);  // page 5 is free
  CHECK_THROWS_AS(host.read_row(2, 0, back.data()), Error);   // no layer 2
  // Request 1 takes the 4 remaining pages (positions 4..19); request 0 then cannot open a new page.
  CHECK(host.assign(1, 4, 16).size() == 16);
  CHECK(host.available_size() == 0);
  CHECK(host.assign(0, 9, 1) == V{13});  // inside its allocated page: no new page needed
  CHECK_THROWS_AS(host.assign(0, 12, 1), OutOfMemoryError);
  host.check_invariants();
  CHECK(host.free_request(0) == 3);
  CHECK(host.host_loc(0, 8) == -1);
  CHECK(host.owned_pages().size() == 5);
  host.free_request(1);
  CHECK(host.owned_pages().empty());
  host.check_invariants();
}
