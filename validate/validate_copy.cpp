// @brief validate: scattered row copies (gather host→device, backup device→host) with odd row sizes, runs of
// consecutive rows (the copy engine merges them) and scattered rows, in the kernel and copy-engine modes.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "validate/validate.h"
#include "core/error.h"

namespace hisparse::validation {
namespace {

constexpr std::array<CopyMode, 2> kModes = {CopyMode::kFused, CopyMode::kCopyEngine};
const char* mode_label(CopyMode m) { return m == CopyMode::kCopyEngine ? "copy-engine" : "zero-copy"; }

struct CopyCase {
  RowCopyView view;
  std::vector<int64_t> host_row, device_row;
  std::vector<uint8_t> host_pool, device_pool;
  std::string describe;
};

/// `distinct_host`: backup writes host rows, so they must be distinct (two writers of one row race).
CopyCase make_copy_case(Rng& rng, bool distinct_host) {
  CopyCase c;
  static constexpr std::array<int64_t, 6> kRowBytes = {16, 48, 144, 656, 1152, 2064};
  const int64_t rb = kRowBytes[rng.below(kRowBytes.size())];
  const int64_t count = rng.chance(1, 10) ? rng.range(0, 20000) : rng.range(0, 600);
  const int64_t host_rows = count + rng.range(1, 2000);
  const int64_t device_rows = count + rng.range(1, 2000);
  const bool runs = rng.chance(1, 4);  // consecutive rows on both sides
  std::vector<int64_t> dperm(device_rows), hperm(host_rows);
  for (int64_t i = 0; i < device_rows; ++i) dperm[i] = i;
  for (int64_t i = 0; i < host_rows; ++i) hperm[i] = i;
  for (int64_t i = device_rows; i > 1; --i) std::swap(dperm[i - 1], dperm[rng.below(i)]);
  for (int64_t i = host_rows; i > 1; --i) std::swap(hperm[i - 1], hperm[rng.below(i)]);
  c.host_row.resize(count);
  c.device_row.resize(count);
  const int64_t h0 = rng.range(0, host_rows - count), d0 = rng.range(0, device_rows - count);
  for (int64_t i = 0; i < count; ++i) {
    c.device_row[i] = runs ? d0 + i : dperm[i];
    c.host_row[i] = runs ? h0 + i : distinct_host ? hperm[i] : static_cast<int64_t>(rng.below(host_rows));
  }
  c.host_pool.resize(size_t(host_rows * rb));
  c.device_pool.resize(size_t(device_rows * rb));
  rng.fill_bytes(c.host_pool.data(), c.host_pool.size());
  rng.fill_bytes(c.device_pool.data(), c.device_pool.size());
  c.view.count = count;
  c.view.row_bytes = rb;
  c.view.host_rows = host_rows;
  c.view.device_rows = device_rows;
  c.describe = fmt::format("rows={} row_bytes={} host_rows={} device_rows={}{}", count, rb, host_rows, device_rows,
                           runs ? " consecutive" : "");
  return c;
}

void point(RowCopyView& v, CopyCase& c, std::vector<uint8_t>& host_pool, std::vector<uint8_t>& device_pool) {
  v = c.view;
  v.host_row = c.host_row.data();
  v.device_row = c.device_row.data();
  v.host_pool = host_pool.data();
  v.device_pool = device_pool.data();
}

void validate_copy(const ValidateContext& ctx, std::vector<OpReport>& out, const char* op, bool to_device) {
  const size_t first = out.size();
  for (CopyMode m : kModes) out.push_back(OpReport{op, mode_label(m)});
  const auto& o = ctx.options;
  for (int64_t ci = o.start_case; ci < o.start_case + o.cases; ++ci) {
    const uint64_t seed = case_seed(o.seed, op, ci);
    Rng rng(seed);
    const CopyMode mode = kModes[static_cast<size_t>(ci) % kModes.size()];
    OpReport& report = out[first + static_cast<size_t>(ci) % kModes.size()];
    ++report.cases;
    ctx.dut.set_copy_mode(mode);
    CopyCase c = make_copy_case(rng, !to_device);
    std::vector<uint8_t> ref_host = c.host_pool, ref_dev = c.device_pool, dut_host = c.host_pool,
                         dut_dev = c.device_pool;
    RowCopyView rv, dv;
    point(rv, c, ref_host, ref_dev);
    point(dv, c, dut_host, dut_dev);
    Checker check(report, o.seed, ci, c.describe + ", " + mode_label(mode));
    try {
      if (to_device) {
        ctx.ref.gather(rv);
        ctx.dut.gather(dv);
      } else {
        ctx.ref.backup(rv);
        ctx.dut.backup(dv);
      }
    } catch (const Error& e) {
      check.fail(std::string("threw: ") + e.what());
      continue;
    }
    check.bytes("device pool", ref_dev.data(), dut_dev.data(), ref_dev.size(), c.view.row_bytes);
    check.bytes("host pool", ref_host.data(), dut_host.data(), ref_host.size(), c.view.row_bytes);
  }
}

}  // namespace

void validate_gather(const ValidateContext& ctx, std::vector<OpReport>& out) { validate_copy(ctx, out, "gather", true); }
void validate_backup(const ValidateContext& ctx, std::vector<OpReport>& out) {
  validate_copy(ctx, out, "backup", false);
}

}  // namespace hisparse::validation
