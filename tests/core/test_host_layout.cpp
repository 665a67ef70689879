// @brief The host-pool layouts' index math (core/host_layout.h) against SGLang's tensor shapes, written out by hand.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/host_layout.h"

using namespace hisparse;

TEST_CASE("host_layout: chunk offsets follow SGLang's dims for each layout") {
  // size 8 tokens, pages of 4, 3 layers, 2 heads of 16 bytes.
  const HostLayoutShape s{8, 4, 3, 2, 16};
  MESSAGE("layer_first [layer][token][head]: (l=2, t=5, h=1) = ((2*8 + 5)*2 + 1)*16");
  CHECK(host_chunk_offset(HostLayout::kLayerFirst, s, 2, 5, 1) == ((2 * 8 + 5) * 2 + 1) * 16);
  MESSAGE("page_first [token][layer][head]: (l=2, t=5, h=1) = ((5*3 + 2)*2 + 1)*16");
  CHECK(host_chunk_offset(HostLayout::kPageFirst, s, 2, 5, 1) == ((5 * 3 + 2) * 2 + 1) * 16);
  MESSAGE("page_head [page][head][token in page][layer]: t=5 is page 1, slot 1: (((1*2 + 1)*4 + 1)*3 + 2)*16");
  CHECK(host_chunk_offset(HostLayout::kPageHead, s, 2, 5, 1) == (((1 * 2 + 1) * 4 + 1) * 3 + 2) * 16);
  MESSAGE("the device pool is layer-first with its own token count");
  CHECK(device_chunk_offset(s, 10, 2, 7, 1) == ((2 * 10 + 7) * 2 + 1) * 16);
}

TEST_CASE("host_layout: every layout is a bijection onto the pool's bytes") {
  const HostLayoutShape s{12, 4, 5, 3, 32};
  for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead}) {
    std::set<int64_t> seen;
    for (int64_t layer = 0; layer < s.layers; ++layer)
      for (int64_t t = 0; t < s.size; ++t)
        for (int64_t h = 0; h < s.heads; ++h) {
          const int64_t o = host_chunk_offset(l, s, layer, t, h);
          // Expectation: chunk-aligned, inside the pool, never shared.
          CHECK(o % s.head_bytes == 0);
          CHECK(o >= 0);
          CHECK(o + s.head_bytes <= s.total_bytes());
          seen.insert(o);
        }
    CHECK(static_cast<int64_t>(seen.size()) == s.layers * s.size * s.heads);
  }
}

TEST_CASE("host_layout: names round-trip and bad views are refused naming the field") {
  for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead})
    CHECK(parse_host_layout(host_layout_name(l), "x") == l);
  CHECK_THROWS_WITH_AS(parse_host_layout("head_first", "--layout"),
                       "--layout: layout 'head_first', expected layer_first, page_first or page_head", Error);
  std::vector<uint8_t> host(size_t(8 * 2 * 16)), dev(size_t(2 * 4 * 16));
  const int64_t hl[2] = {1, 1}, dl[2] = {0, 1};
  LayoutCopyView v;
  v.shape = HostLayoutShape{8, 4, 2, 1, 16};
  v.count = 2;
  v.host_loc = hl;
  v.device_loc = dl;
  v.layer_count = 2;
  v.host_pool = host.data();
  v.device_pool = dev.data();
  v.device_rows = 4;
  MESSAGE("a gather may read one host token twice; a backup may not write it twice");
  CHECK_NOTHROW(check_layout_copy(v, "gather", false));
  CHECK_THROWS_WITH_AS(check_layout_copy(v, "backup", true),
                       "backup: host_loc token 1 appears twice (each written token must be distinct)", Error);
  v.shape.head_bytes = 24;
  CHECK_THROWS_WITH_AS(check_layout_copy(v, "gather", false), "gather: head_bytes = 24, expected a positive multiple of 16",
                       Error);
}
