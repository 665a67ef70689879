// @brief HiSparseV2Admission (cpu_ref/memory/hisparse_v2_admission.h): admit_request's fallbacks to standard under
// both coordinators, hand-worked: short prefix (current only), host capacity, indexer pages, temp buffer, and a
// retracted request re-admitted with its recomputed prefix and an empty buffer.
#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "core/hisparse_v2.h"
#include "cpu_ref/memory/hisparse_v2_admission.h"
#include "cpu_ref/policies/registry.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

TEST_CASE("hisparse-v2 admission: the short-prefix gate is the only difference between the coordinators") {
  // Page 64, H 4096, quotas large enough. A 4,043-token prompt: 63 pages, tree_len 4032 < 4096.
  // Current: standard (shorter than the buffer), nothing taken. Older: V2, 63 indexer pages, 4032 host tokens, the
  // 4096-token temp buffer. A 63-token prompt has no whole page: standard under both.
  for (const V2Coordinator rules : {V2Coordinator::kCurrent, V2Coordinator::kOlder}) {
    HiSparseV2Admission a({64, 4096, 1 << 20, 1000, rules});
    const bool current = rules == V2Coordinator::kCurrent;
    const V2AdmitResult r = a.admit(1, 4043, 1 << 20);
    CHECK(r.outcome == (current ? V2Admit::kShorterThanBuffer : V2Admit::kV2));
    CHECK(r.evicted_end == (current ? 0 : 4032));
    CHECK(r.temp_tokens == (current ? 0 : 4096));
    CHECK(a.indexer_pages_free() == (current ? 1000 : 1000 - 63));
    CHECK(a.host_reserved() == (current ? 0 : 4032));
    CHECK(a.admit(2, 63, 1 << 20).outcome == V2Admit::kNoWholePage);
    // A 4,096-token prompt: tree_len 4096, not shorter than H: V2 under both.
    CHECK(a.admit(3, 4096, 1 << 20).outcome == V2Admit::kV2);
  }
}

TEST_CASE("hisparse-v2 admission: host, indexer and temp-buffer exhaustion fall back to standard, in that order") {
  // Page 64, H 128, host capacity 1000 tokens, 20 indexer pages.
  HiSparseV2Admission a({64, 128, 1000, 20, V2Coordinator::kCurrent});
  // Request 1: 640 tokens = 10 pages: V2, host 640/1000, indexer 10/20 left.
  CHECK(a.admit(1, 640, 10000).outcome == V2Admit::kV2);
  // Request 2: 448 tokens = 7 pages: 640 + 448 = 1088 > 1000: host capacity, although indexer pages remain.
  CHECK(a.admit(2, 448, 10000).outcome == V2Admit::kHostCapacity);
  // Request 3: 320 tokens = 5 pages: host 960 <= 1000, indexer 5 <= 10, but the device gives only 127 < H = 128.
  const V2AdmitResult r3 = a.admit(3, 320, 127);
  CHECK(r3.outcome == V2Admit::kTempBuffer);
  CHECK(a.indexer_pages_free() == 10);  // the indexer pages went back
  CHECK(a.host_reserved() == 640);
  // With room for the buffer it is admitted: host 960, indexer 5 left.
  CHECK(a.admit(3, 320, 128).outcome == V2Admit::kV2);
  // Request 4: 6 pages = 384 tokens: host 960 + 384 > 1000 -> host first (checked before the indexer).
  CHECK(a.admit(4, 384, 10000).outcome == V2Admit::kHostCapacity);
  // Finishing request 1 gives back 640 host tokens, 10 pages and its 128-token buffer; request 4 is then admitted:
  // host 320 + 384 = 704 <= 1000, pages 6 <= 15 free, leaving 9.
  CHECK(a.finish(1) == 128);
  CHECK(a.admit(4, 384, 10000).outcome == V2Admit::kV2);
  CHECK(a.indexer_pages_free() == 9);
  CHECK(a.finish(99) == 0);  // unknown or standard requests hold nothing
  CHECK_THROWS_AS(a.admit(3, 320, 128), Error);  // already V2
  // Indexer exhaustion with the host gate off (capacity 0: no host pool attached): 6 pages > 5 in all.
  HiSparseV2Admission b({64, 128, 0, 5, V2Coordinator::kOlder});
  CHECK(b.admit(1, 384, 10000).outcome == V2Admit::kIndexerPages);
  CHECK(b.admit(1, 320, 10000).outcome == V2Admit::kV2);  // 5 pages fit
}

TEST_CASE("hisparse-v2: a retracted request is re-admitted with its recomputed prefix and an empty buffer") {
  // The 4,043-token prompt runs as standard under current (4032 < H = 4096). Retracted after 100 generated tokens, it
  // re-prefills 4,143 tokens: 64 whole pages, tree_len 4096 = H, so re-admission runs it as V2 with evicted_end 4096.
  HiSparseV2Admission a({64, 4096, 0, 1000, V2Coordinator::kCurrent});
  CHECK(a.admit(7, 4043, 1 << 20).outcome == V2Admit::kShorterThanBuffer);
  CHECK(a.finish(7) == 0);  // the retraction frees nothing a standard request did not hold
  const V2AdmitResult again = a.admit(7, 4143, 1 << 20);
  CHECK(again.outcome == V2Admit::kV2);
  CHECK(again.evicted_end == 4096);
  // The swap-in side agrees: the first step after re-admission has n0 = 4144, the buffer starts empty (reset), so
  // every selected position below 4096 misses: here 0..99, 100 misses, and 4100 is resident.
  auto p = make_policy("hisparse-v2");
  p->reset(4096, InitialState::kEmpty);
  std::vector<int32_t> sel;
  for (int32_t t = 0; t < 100; ++t) sel.push_back(t);
  sel.push_back(4100);
  sel.resize(128, -1);
  SwapInScratch scratch;
  SwapInPlan plan;
  p->step({sel.data(), 128, 4144, 128, nullptr, 1}, {}, plan, scratch);
  CHECK(v2_admitted_evicted_end(4144, 64, 4096, V2Coordinator::kCurrent) == again.evicted_end);
  CHECK(plan.counters.misses == 100);
  CHECK(plan.counters.newest_hits == 1);
}
