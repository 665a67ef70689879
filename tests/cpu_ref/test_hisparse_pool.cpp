// @brief Unit tests: HiSparseCoordinator device buffers (growth, reserved slot, admission paths, teardown).
#include <doctest/doctest.h>

#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;
using V = std::vector<int64_t>;

namespace {
// H = 8, page 4 (padded buffer 12); device 32 tokens (pages 1..8), ratio 2; 4 request slots of 64 tokens.
struct Fixture {
  ReqToTokenPool req_to_token{4, 64};
  HiSparseTokenToKVPoolAllocator allocator{32, 4, 2};
  HostPool host{32, 2, 4, /*num_layers=*/2, /*row_bytes=*/8, 4, 64};
  HiSparseCoordinator coord{req_to_token, allocator, host, 8};
};
}  // namespace

TEST_CASE("HiSparseCoordinator: capacity grows page by page, then H + page") {
  Fixture f;
  CHECK(f.coord.capacity_for(1) == 4);
  CHECK(f.coord.capacity_for(4) == 4);
  CHECK(f.coord.capacity_for(5) == 12);  // ceil to 8 = H → H + page
  CHECK(f.coord.capacity_for(100) == 12);
  CHECK_THROWS_AS(HiSparseCoordinator(f.req_to_token, f.allocator, f.host, 6), Error);  // not a page multiple
}

TEST_CASE("HiSparseCoordinator: staged admission, decode growth, reserved slot, eager backup") {
  Fixture f;
  const int64_t r = f.coord.add_request();
  CHECK(f.coord.extend(r, 3) == V{4, 5, 6});  // device rows 4, 5, 6 too
  const AdmitPlan a = f.coord.admit_staged(r);
  CHECK(a.backup.device == V{4, 5, 6});
  CHECK(a.backup.host == V{0, 1, 2});
  CHECK(a.initial == InitialState::kIdentity);
  CHECK(f.coord.buffer(r) == V{4, 5, 6, 7});  // the prefill rows plus the rest of their page
  CHECK(f.coord.slot_token(r) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(f.allocator.mapped_indices().empty());

  // n = 4: first step after admission, no backup; token 3 goes to buffer slot 3.
  DecodePlan d = f.coord.decode(r);
  CHECK(d.backup.empty());
  CHECK(d.logical_loc == 7);
  CHECK(d.device_loc == 7);
  CHECK(d.grown_slots == 0);
  // n = 5: backs up token 3 (slot 3 → host row 3); the buffer would reach H = 8, so it jumps to 12 slots.
  d = f.coord.decode(r);
  CHECK(d.backup.device == V{7});
  CHECK(d.backup.host == V{3});
  CHECK(d.grown_slots == 8);
  CHECK(f.coord.buffer(r) == V{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(d.device_loc == 8);  // slot 4
  for (int i = 0; i < 4; ++i) d = f.coord.decode(r);  // n = 6..9
  CHECK(f.coord.seq_len(r) == 9);
  CHECK(d.device_loc == 12);  // n = 9 = H + 1: the newest token lives in reserved slot 8
  d = f.coord.decode(r);      // n = 10: token 8 is backed up from the reserved slot
  CHECK(d.backup.device == V{12});
  CHECK(d.device_loc == 12);
  CHECK(f.coord.buffer(r).size() == 12);
  // Only the newest token maps to the reserved row; tokens 3..7 keep their slot rows.
  CHECK(f.allocator.translate(f.req_to_token.at(r, 9)) == 12);
  CHECK(f.allocator.translate(f.req_to_token.at(r, 8)) == 0);
  CHECK(f.allocator.translate(f.req_to_token.at(r, 3)) == 7);
  for (int64_t pos = 0; pos < 9; ++pos) CHECK(f.host.host_loc(r, pos) >= 0);
  CHECK(f.host.host_loc(r, 9) == -1);
  f.coord.check_invariants();
  f.coord.finish(r);
  CHECK(f.coord.leaks().empty());
  f.coord.check_invariants();
}

TEST_CASE("HiSparseCoordinator: direct admission marks slots empty past H and preloads within H") {
  Fixture f;
  const int64_t long_req = f.coord.add_request();
  CHECK(f.coord.extend_logical_only(long_req, 10).size() == 10);
  CHECK(f.allocator.device().used_size() == 0);
  const AdmitPlan a = f.coord.admit_direct(long_req);
  CHECK(a.initial == InitialState::kEmpty);
  CHECK(a.preload.empty());
  CHECK(f.coord.buffer(long_req).size() == 12);
  CHECK(f.coord.slot_token(long_req) == std::vector<int32_t>(8, -1));
  for (int64_t pos = 0; pos < 10; ++pos) CHECK(f.host.host_loc(long_req, pos) == pos);

  const int64_t short_req = f.coord.add_request();
  f.coord.extend_logical_only(short_req, 3);
  const AdmitPlan b = f.coord.admit_direct(short_req);
  CHECK(b.initial == InitialState::kIdentity);
  CHECK(b.preload.host == V{12, 13, 14});  // host page 3 (pages 0..2 went to the long request)
  CHECK(b.preload.device == V{16, 17, 18});  // device page 4 (pages 1..3 hold the long request's buffer)
  CHECK(f.coord.buffer(short_req) == V{16, 17, 18, 19});
  CHECK(f.coord.slot_token(short_req) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});

  const DecodePlan d = f.coord.decode(long_req);  // n = 11: reserved slot, no backup yet
  CHECK(d.device_loc == f.coord.buffer(long_req)[8]);
  CHECK(d.backup.empty());
  CHECK(f.coord.decode(long_req).backup.host.size() == 1);  // token 10 backed up now
  f.coord.check_invariants();
  f.coord.finish(long_req);
  f.coord.finish(short_req);
  CHECK(f.coord.leaks().empty());
}

TEST_CASE("HiSparseCoordinator: a request finished before admission frees its prefill rows") {
  Fixture f;
  const int64_t r = f.coord.add_request();
  f.coord.extend(r, 5);
  f.coord.extend(r, 2);  // chunked prefill continues the partial page on both pools
  CHECK(f.allocator.device().used_size() == 7);
  f.coord.check_invariants();
  f.coord.finish(r);
  CHECK(f.coord.leaks().empty());
}

TEST_CASE("HiSparseCoordinator: misuse and out of memory are errors that change nothing") {
  Fixture f;
  const int64_t r = f.coord.add_request();
  CHECK_THROWS_AS(f.coord.decode(r), Error);        // not admitted
  CHECK_THROWS_AS(f.coord.admit_staged(r), Error);  // nothing prefilled
  f.coord.extend(r, 4);
  CHECK_THROWS_AS(f.coord.extend_logical_only(r, 1), Error);  // mixing paths
  CHECK_THROWS_AS(f.coord.admit_direct(r), Error);
  f.coord.admit_staged(r);
  CHECK_THROWS_AS(f.coord.extend(r, 1), Error);  // decode only after admission
  // r's buffer is one page; two prefills of 4 and 3 pages fill the other 7 device pages.
  const int64_t big = f.coord.add_request();
  f.coord.extend(big, 16);
  const int64_t big2 = f.coord.add_request();
  f.coord.extend(big2, 12);
  CHECK(f.allocator.device().available_size() == 0);
  // n = 5 would grow r's buffer from 4 to 12 slots: 8 rows requested, none available.
  try {
    f.coord.decode(r);
    FAIL("decode should run out of device rows");
  } catch (const OutOfMemoryError& e) {
    CHECK(e.requested() == 8);
    CHECK(e.available() == 0);
  }
  CHECK(f.coord.seq_len(r) == 4);
  f.coord.check_invariants();
  f.coord.finish(big);
  CHECK(f.coord.decode(r).grown_slots == 8);
  f.coord.check_invariants();
  f.coord.finish(big2);
  f.coord.finish(r);
  CHECK(f.coord.leaks().empty());
  CHECK_THROWS_AS(f.coord.finish(r), Error);  // finished twice
}
