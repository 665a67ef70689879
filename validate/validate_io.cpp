// @brief validate: the layout-aware host-pool copies (gather one layer or a few, backup all layers) in each of
// SGLang's three layouts, MLA rows (one chunk) and MHA/GQA rows (several heads), odd page sizes and pool sizes; and
// the DeltaKV reconstruction with random references, residual codes (NaN codes included) and scales.
#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/format.h>

#include "validate/validate.h"
#include "core/error.h"

namespace hisparse::validation {
namespace {

constexpr std::array<HostLayout, 3> kLayouts = {HostLayout::kLayerFirst, HostLayout::kPageFirst, HostLayout::kPageHead};

struct LayoutCase {
  LayoutCopyView view;
  std::vector<int64_t> host_loc, device_loc;
  std::vector<uint8_t> host_pool, device_pool;
  std::string describe;
};

/// `gather`: a layer or a few (decode loads per layer); otherwise every layer (backup after prefill / newest token).
LayoutCase make_layout_case(Rng& rng, HostLayout layout, bool gather) {
  LayoutCase c;
  LayoutCopyView& v = c.view;
  v.layout = layout;
  const bool mha = layout == HostLayout::kPageHead || rng.chance(1, 2);
  static constexpr std::array<int64_t, 4> kPages = {1, 16, 32, 64};
  static constexpr std::array<int64_t, 4> kMlaBytes = {16, 656, 1152, 2064};
  static constexpr std::array<int64_t, 4> kHeadBytes = {16, 64, 128, 256};
  v.shape.page_size = kPages[rng.below(kPages.size())];
  v.shape.size = v.shape.page_size * rng.range(1, std::max<int64_t>(1, 640 / v.shape.page_size));
  v.shape.layers = rng.range(1, 12);
  v.shape.heads = mha ? rng.range(1, 8) : 1;
  v.shape.head_bytes = mha ? kHeadBytes[rng.below(kHeadBytes.size())] : kMlaBytes[rng.below(kMlaBytes.size())];
  v.device_rows = rng.range(1, 600);
  v.count = rng.range(0, std::min(v.shape.size, v.device_rows));
  if (gather) {
    v.layer_count = rng.chance(3, 4) ? 1 : rng.range(1, v.shape.layers);
    v.layer_begin = rng.range(0, v.shape.layers - v.layer_count);
  } else {
    v.layer_begin = 0;
    v.layer_count = v.shape.layers;
  }
  // Distinct tokens on both sides (the written side must be; the read side is too in SGLang's transfers).
  std::vector<int64_t> hp(static_cast<size_t>(v.shape.size)), dp(static_cast<size_t>(v.device_rows));
  std::iota(hp.begin(), hp.end(), 0);
  std::iota(dp.begin(), dp.end(), 0);
  const bool runs = rng.chance(1, 4);  // whole pages in order, the way SGLang hands out host pages
  for (size_t i = hp.size(); i > 1; --i) std::swap(hp[i - 1], hp[rng.below(i)]);
  for (size_t i = dp.size(); i > 1; --i) std::swap(dp[i - 1], dp[rng.below(i)]);
  const int64_t h0 = rng.range(0, v.shape.size - v.count);
  c.host_loc.resize(static_cast<size_t>(v.count));
  c.device_loc.resize(static_cast<size_t>(v.count));
  for (int64_t i = 0; i < v.count; ++i) {
    c.host_loc[size_t(i)] = runs ? h0 + i : hp[size_t(i)];
    c.device_loc[size_t(i)] = dp[size_t(i)];
  }
  c.host_pool.resize(static_cast<size_t>(v.shape.total_bytes()));
  c.device_pool.resize(static_cast<size_t>(v.device_bytes()));
  rng.fill_bytes(c.host_pool.data(), c.host_pool.size());
  rng.fill_bytes(c.device_pool.data(), c.device_pool.size());
  c.describe = fmt::format("{} tokens={} layers [{}, {}) of {} heads={} head_bytes={} page={} size={} device_rows={}{}",
                           host_layout_name(layout), v.count, v.layer_begin, v.layer_begin + v.layer_count,
                           v.shape.layers, v.shape.heads, v.shape.head_bytes, v.shape.page_size, v.shape.size,
                           v.device_rows, runs ? " in-order" : "");
  return c;
}

LayoutCopyView pointed(const LayoutCase& c, std::vector<uint8_t>& host, std::vector<uint8_t>& dev) {
  LayoutCopyView v = c.view;
  v.host_loc = c.host_loc.data();
  v.device_loc = c.device_loc.data();
  v.host_pool = host.data();
  v.device_pool = dev.data();
  return v;
}

void validate_layout_copy(const ValidateContext& ctx, std::vector<OpReport>& out, const char* op, bool gather) {
  const size_t first = out.size();
  for (HostLayout l : kLayouts) out.push_back(OpReport{op, host_layout_name(l)});
  const auto& o = ctx.options;
  for (int64_t ci = o.start_case; ci < o.start_case + o.cases; ++ci) {
    const uint64_t seed = case_seed(o.seed, op, ci);
    Rng rng(seed);
    const size_t k = static_cast<size_t>(ci) % kLayouts.size();
    OpReport& report = out[first + k];
    ++report.cases;
    LayoutCase c = make_layout_case(rng, kLayouts[k], gather);
    std::vector<uint8_t> ref_host = c.host_pool, ref_dev = c.device_pool, dut_host = c.host_pool,
                         dut_dev = c.device_pool;
    const LayoutCopyView rv = pointed(c, ref_host, ref_dev), dv = pointed(c, dut_host, dut_dev);
    Checker check(report, o.seed, ci, c.describe);
    try {
      if (gather) {
        ctx.ref.layout_gather(rv);
        ctx.dut.layout_gather(dv);
      } else {
        ctx.ref.layout_backup(rv);
        ctx.dut.layout_backup(dv);
      }
    } catch (const Error& e) {
      check.fail(std::string("threw: ") + e.what());
      continue;
    }
    check.bytes("device pool", ref_dev.data(), dut_dev.data(), ref_dev.size(), c.view.shape.head_bytes);
    check.bytes("host pool", ref_host.data(), dut_host.data(), ref_host.size(), c.view.shape.head_bytes);
  }
}

}  // namespace

void validate_layout_gather(const ValidateContext& ctx, std::vector<OpReport>& out) {
  validate_layout_copy(ctx, out, "gather-layout", true);
}
void validate_layout_backup(const ValidateContext& ctx, std::vector<OpReport>& out) {
  validate_layout_copy(ctx, out, "backup-layout", false);
}

void validate_deltakv(const ValidateContext& ctx, std::vector<OpReport>& out) {
  const size_t at = out.size();
  out.push_back(OpReport{"deltakv", "bf16 refs + fp8 residual"});
  const auto& o = ctx.options;
  for (int64_t ci = o.start_case; ci < o.start_case + o.cases; ++ci) {
    const uint64_t seed = case_seed(o.seed, "deltakv", ci);
    Rng rng(seed);
    OpReport& report = out[at];
    ++report.cases;
    DeltaKvArgs a;
    a.rows = rng.chance(1, 10) ? rng.range(0, 2048) : rng.range(0, 96);
    a.dim = rng.chance(1, 2) ? 576 : rng.range(1, 700);
    a.refs = static_cast<int32_t>(rng.chance(1, 8) ? rng.range(1, kDeltaKvMaxRefs) : rng.range(1, 8));
    a.pool_rows = rng.range(1, 512);
    std::vector<uint16_t> pool(size_t(a.pool_rows * a.dim));
    std::vector<int32_t> idx(size_t(a.rows * a.refs));
    std::vector<uint8_t> res(size_t(a.rows * a.dim));
    std::vector<float> scale(size_t(a.rows));
    // bf16 reference values: random bits mostly in a sane range, any pattern (inf, NaN) now and then.
    const bool wild = rng.chance(1, 8);
    for (auto& p : pool) {
      const auto bits = static_cast<uint16_t>(rng.next());
      p = wild ? bits : static_cast<uint16_t>((bits & 0x807f) | (uint16_t(rng.range(0x3a, 0x42)) << 7));
    }
    for (auto& i : idx) i = static_cast<int32_t>(rng.below(uint64_t(a.pool_rows)));
    rng.fill_bytes(res.data(), res.size());  // every fp8 code, NaN codes included
    for (auto& s : scale) s = rng.chance(1, 16) ? 0.0f : static_cast<float>(rng.range(1, 1 << 20)) * 0x1p-26f;
    a.ref_pool = pool.data();
    a.ref_index = idx.data();
    a.residual = res.data();
    a.residual_scale = scale.data();
    std::vector<uint16_t> ref_out(res.size(), 0), dut_out(res.size(), 0);
    Checker check(report, o.seed, ci,
                  fmt::format("rows={} dim={} refs={} pool_rows={}{}", a.rows, a.dim, a.refs, a.pool_rows,
                              wild ? " any-bits" : ""));
    try {
      DeltaKvArgs r = a, d = a;
      r.out = ref_out.data();
      d.out = dut_out.data();
      ctx.ref.deltakv_reconstruct(r);
      ctx.dut.deltakv_reconstruct(d);
    } catch (const Error& e) {
      check.fail(std::string("threw: ") + e.what());
      continue;
    }
    check.equal("out", ref_out, dut_out);
  }
}

}  // namespace hisparse::validation
