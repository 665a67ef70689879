// @brief cpu_ref's layout-aware copies (through a backed HostPool in each layout) and DeltaKV reconstruction
// against values worked out by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/numerics/bf16.h"
#include "cpu_ref/deltakv.h"
#include "cpu_ref/memory/host_layout_copy.h"
#include "cpu_ref/memory/host_pool.h"

using namespace hisparse;

TEST_CASE("layout copies: a row written into a backed pool in any layout comes back through gather and backup") {
  for (HostLayout l : {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead}) {
    const int64_t heads = l == HostLayout::kPageHead ? 4 : 1;
    // 16 device tokens × ratio 2 = 32 host tokens, pages of 8, 3 layers, rows of 64 bytes.
    cpu_ref::HostPool pool(16, 2, 8, 3, 64, 2, 32, true, l, heads);
    const auto rows = pool.assign(0, 0, 20);
    std::vector<uint8_t> row(64);
    for (int64_t layer = 0; layer < 3; ++layer)
      for (int64_t t : rows) {
        for (int b = 0; b < 64; ++b) row[size_t(b)] = uint8_t(layer * 71 + t * 13 + b);
        pool.write_row(layer, t, row.data());
      }
    // Gather tokens 3 and 17 of layer 1 into device slots 1 and 0.
    const int64_t hl[2] = {rows[3], rows[17]}, dl[2] = {1, 0};
    std::vector<uint8_t> dev(size_t(3 * 2 * 64), 0);
    LayoutCopyView v;
    v.layout = l;
    v.shape = pool.layout().shape();
    v.count = 2;
    v.host_loc = hl;
    v.device_loc = dl;
    v.layer_begin = 1;
    v.layer_count = 1;
    v.host_pool = pool.data();
    v.device_pool = dev.data();
    v.device_rows = 2;
    cpu_ref::layout_gather(v);
    std::vector<uint8_t> want(64);
    pool.read_row(1, rows[3], want.data());
    // Expectation: device layer 1, slot 1 holds host row (1, token 3) byte for byte, in any layout.
    CHECK(std::memcmp(dev.data() + (1 * 2 + 1) * 64, want.data(), 64) == 0);
    // Expectation: layers 0 and 2 of the device pool stay untouched (a per-layer load).
    CHECK(std::all_of(dev.begin(), dev.begin() + 2 * 64, [](uint8_t b) { return b == 0; }));
    // Backup all layers of device slot 1 into host token 19, then read it back row by row.
    for (size_t i = 0; i < dev.size(); ++i) dev[i] = uint8_t(200 + i % 50);
    const int64_t bh[1] = {rows[19]}, bd[1] = {1};
    v.host_loc = bh;
    v.device_loc = bd;
    v.count = 1;
    v.layer_begin = 0;
    v.layer_count = 3;
    cpu_ref::layout_backup(v);
    for (int64_t layer = 0; layer < 3; ++layer) {
      pool.read_row(layer, rows[19], want.data());
      CHECK(std::memcmp(want.data(), dev.data() + (layer * 2 + 1) * 64, 64) == 0);
    }
  }
}

TEST_CASE("host pool: heads split a row only in page_head") {
  CHECK_THROWS_WITH_AS(cpu_ref::HostPool(16, 1, 8, 2, 64, 1, 16, false, HostLayout::kPageFirst, 2),
                       "HostPool: heads 2 with layout page_first: only page_head splits a row into heads", Error);
}

TEST_CASE("deltakv: mean of the references plus residual times scale, rounded to bf16") {
  // Pool rows (dim 2): r0 = (1, 2), r1 = (2, 4), r2 = (4, 8). Compressed row: refs {0, 2}, residual fp8 codes
  // 0x38 (= 1.0) and 0xb8 (= -1.0), scale 0.5. Mean = (2.5, 5); out = (2.5 + 0.5, 5 - 0.5) = (3, 4.5).
  const std::vector<uint16_t> pool = {num::float_to_bf16(1), num::float_to_bf16(2), num::float_to_bf16(2),
                                      num::float_to_bf16(4), num::float_to_bf16(4), num::float_to_bf16(8)};
  const std::vector<int32_t> idx = {0, 2};
  const std::vector<uint8_t> res = {0x38, 0xb8};
  const std::vector<float> scale = {0.5f};
  std::vector<uint16_t> out(2, 0);
  DeltaKvArgs a;
  a.rows = 1;
  a.dim = 2;
  a.refs = 2;
  a.ref_pool = pool.data();
  a.pool_rows = 3;
  a.ref_index = idx.data();
  a.residual = res.data();
  a.residual_scale = scale.data();
  a.out = out.data();
  cpu_ref::deltakv_reconstruct(a);
  CHECK(num::bf16_to_float(out[0]) == 3.0f);
  CHECK(num::bf16_to_float(out[1]) == 4.5f);
  MESSAGE("a reference outside the pool is refused naming the entry");
  const std::vector<int32_t> bad = {0, 3};
  a.ref_index = bad.data();
  CHECK_THROWS_WITH_AS(cpu_ref::deltakv_reconstruct(a), "deltakv: ref_index[0][1] = 3, outside the 3 reference rows",
                       Error);
}
