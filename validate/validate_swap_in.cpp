// @brief validate: random batched swap-in cases (odd H and K, -1 padding, padded rows, empty / identity / evolved
// starts, the fast→slow switch at n = H+1, invalid inputs) through both backends, a few steps each; and whole
// top-k traces (a file, or `gen:PRESET[:shuffle][:empty]` for a seeded synthetic one) step by step.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "validate/validate.h"
#include "core/error.h"
#include "traces/trace_generator.h"
#include "traces/trace_source.h"

namespace hisparse::validation {
namespace {

constexpr std::array<int32_t, 6> kSizes = {1, 3, 7, 17, 2048, 6144};
constexpr std::array<CopyMode, 3> kModes = {CopyMode::kFused, CopyMode::kSeparate, CopyMode::kCopyEngine};

/// One backend's copy of everything a swap-in step changes.
struct SideState {
  std::vector<int32_t> slot_token, lru;
  std::vector<uint8_t> device_kv;
  SwapInBatchResult result;
};

struct Case {
  int32_t B = 0, H = 0, K = 0;
  int64_t row_bytes = 16;
  int steps = 1;
  std::vector<int32_t> n0;  // [B] n at the first step, 0 = padded row
  std::vector<int64_t> host_loc;
  int64_t stride = 0;
  std::vector<uint8_t> host_pool;
  int64_t host_rows = 0;
  std::string describe;
};

template <typename T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

/// Builds the case and the common starting state of both sides.
Case make_case(Rng& rng, SideState& start) {
  Case c;
  c.H = kSizes[rng.below(kSizes.size())];
  do c.K = kSizes[rng.below(kSizes.size())];
  while (c.K > c.H);
  // One case in four is a large batch (9..72 rows): the CUDA backend runs its cluster swap-in kernel up to batch 8
  // and the one-block kernel above, so both are exercised by construction, not only by traces with many layers.
  if (rng.chance(1, 4))
    c.B = static_cast<int32_t>(c.H <= 2048 ? rng.range(9, 72) : rng.range(9, 16));
  else
    c.B = static_cast<int32_t>(c.H <= 17 ? rng.range(1, 6) : c.H <= 2048 ? rng.range(1, 3) : rng.range(1, 2));
  c.steps = static_cast<int>(rng.range(1, 3));
  static constexpr std::array<int64_t, 4> kRowBytes = {16, 48, 656, 1152};
  c.row_bytes = kRowBytes[rng.below(kRowBytes.size())];
  if (int64_t(c.B) * (c.H + 1) * c.row_bytes > (8 << 20)) c.row_bytes = 16;
  const int64_t H = c.H;
  start.slot_token.assign(size_t(c.B) * H, -1);
  start.lru.assign(size_t(c.B) * H, 0);
  c.n0.assign(c.B, 0);
  std::string kinds;
  for (int32_t b = 0; b < c.B; ++b) {
    int32_t* st = &start.slot_token[size_t(b) * H];
    int32_t* lru = &start.lru[size_t(b) * H];
    for (int32_t i = 0; i < c.H; ++i) lru[i] = i;
    if (rng.chance(1, 10)) {
      kinds += 'p';  // padded batch row
      for (int32_t i = 0; i < c.H; ++i) st[i] = static_cast<int32_t>(rng.range(-1, 50));
      continue;
    }
    const int kind = static_cast<int>(rng.below(4));
    if (kind == 0) {  // identity: colocated prefill, or grown while decoding
      kinds += 'i';
      for (int32_t i = 0; i < c.H; ++i) st[i] = i;
      const int pick = static_cast<int>(rng.below(4));
      c.n0[b] = pick == 0   ? static_cast<int32_t>(rng.range(1, c.H))
                : pick == 1 ? c.H  // the next step crosses to the slow path at exactly n = H+1
                : pick == 2 ? c.H + 1
                            : static_cast<int32_t>(rng.range(c.H + 1, 3 * int64_t(c.H) + 10));
    } else if (kind == 1) {  // empty: disaggregated prefill, first top-k misses entirely
      kinds += 'e';
      c.n0[b] = static_cast<int32_t>(rng.range(c.H + 1, 3 * int64_t(c.H) + 10));
    } else {  // evolved: random LRU order, random distinct older tokens, some empty slots
      kinds += 'r';
      c.n0[b] = static_cast<int32_t>(rng.range(c.H + 1, 4 * int64_t(c.H) + c.K + 10));
      std::vector<int32_t> perm(c.H);
      for (int32_t i = 0; i < c.H; ++i) perm[i] = i;
      shuffle(perm, rng);
      std::copy(perm.begin(), perm.end(), lru);
      std::vector<int32_t> tokens(c.n0[b] - 1);  // never the newest token n-1
      for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
      shuffle(tokens, rng);
      const bool holes = rng.chance(1, 2);
      for (int32_t i = 0; i < c.H; ++i) st[i] = holes && rng.chance(1, 8) ? -1 : tokens[i];
    }
  }
  int32_t n_max = 0;
  for (int32_t n : c.n0) n_max = std::max(n_max, n);
  c.stride = std::max<int64_t>(1, n_max + c.steps);
  c.host_rows = rng.range(1, 3000);
  c.host_loc.resize(size_t(c.B) * c.stride);
  for (auto& h : c.host_loc) h = static_cast<int64_t>(rng.below(static_cast<uint64_t>(c.host_rows)));
  c.host_pool.resize(size_t(c.host_rows) * c.row_bytes);
  rng.fill_bytes(c.host_pool.data(), c.host_pool.size());
  start.device_kv.resize(size_t(c.B) * (H + 1) * c.row_bytes);
  rng.fill_bytes(start.device_kv.data(), start.device_kv.size());
  c.describe = fmt::format("B={} H={} K={} row_bytes={} steps={} rows={} n0={}", c.B, c.H, c.K, c.row_bytes, c.steps,
                           kinds, fmt::join(c.n0, ","));
  return c;
}

/// One row's selection: v valid distinct positions < n (a share of them current slot tokens, maybe the newest),
/// the rest -1, all in random order.
void make_selection(Rng& rng, const Case& c, const int32_t* slot_token, int32_t n, int32_t* out) {
  const int32_t K = c.K;
  std::fill(out, out + K, -1);
  if (n <= 0) {  // padded row: the content must be ignored, so make it garbage
    for (int32_t i = 0; i < K; ++i) out[i] = static_cast<int32_t>(rng.range(-5, 100));
    return;
  }
  const int32_t cap = std::min(K, n);
  const int32_t v = rng.chance(1, 2) ? cap : static_cast<int32_t>(rng.range(0, cap));
  static constexpr std::array<int, 5> kHitPct = {0, 20, 50, 90, 100};
  const int hit_pct = kHitPct[rng.below(kHitPct.size())];
  std::vector<char> used(n, 0);
  std::vector<int32_t> list;
  list.reserve(v);
  auto add = [&](int32_t t) {
    if (t >= 0 && t < n && !used[t] && int32_t(list.size()) < v) {
      used[t] = 1;
      list.push_back(t);
    }
  };
  if (rng.chance(1, 2)) add(n - 1);
  std::vector<int32_t> held(slot_token, slot_token + c.H);
  shuffle(held, rng);
  const int32_t want_hits = static_cast<int32_t>(int64_t(v) * hit_pct / 100);
  for (int32_t t : held) {
    if (int32_t(list.size()) >= want_hits) break;
    add(t);
  }
  if (int64_t(n) <= 4 * int64_t(v - int32_t(list.size())) + 16) {
    std::vector<int32_t> all(n);
    for (int32_t i = 0; i < n; ++i) all[i] = i;
    shuffle(all, rng);
    for (int32_t t : all) add(t);
  } else {
    while (int32_t(list.size()) < v) add(static_cast<int32_t>(rng.below(static_cast<uint64_t>(n))));
  }
  std::copy(list.begin(), list.end(), out);
  std::vector<int32_t> row(out, out + K);
  shuffle(row, rng);
  std::copy(row.begin(), row.end(), out);
}

/// Breaks one row's input (duplicate, out of range, a miss with no host copy, or a miss whose host copy lies outside
/// the host pool); returns what it did. Both backends must leave that row untouched, process the others, then throw.
std::string inject_invalid(Rng& rng, Case& c, const std::vector<int32_t>& n, std::vector<int32_t>& sel,
                           const int32_t* ref_slot_token) {
  std::vector<int32_t> rows;
  for (int32_t b = 0; b < c.B; ++b)
    if (n[b] > 0) rows.push_back(b);
  if (rows.empty()) return "";
  const int32_t b = rows[rng.below(rows.size())];
  int32_t* s = &sel[size_t(b) * c.K];
  const int kind = static_cast<int>(rng.below(4));
  if (kind == 0) {
    for (int32_t i = 0; i < c.K; ++i)
      if (s[i] >= 0 && c.K > 1) {
        s[(i + 1 + rng.below(c.K - 1)) % c.K] = s[i];
        return fmt::format("duplicate in row {}", b);
      }
  }
  if (kind == 1) {
    s[rng.below(c.K)] = rng.chance(1, 2) ? n[b] : -2 - static_cast<int32_t>(rng.below(5));
    return fmt::format("out-of-range entry in row {}", b);
  }
  for (int32_t i = 0; i < c.K; ++i) {
    const int32_t t = s[i];
    if (t < 0 || t == n[b] - 1) continue;
    if (std::find(ref_slot_token + size_t(b) * c.H, ref_slot_token + size_t(b + 1) * c.H, t) !=
        ref_slot_token + size_t(b + 1) * c.H)
      continue;
    if (kind == 3) {
      c.host_loc[size_t(b) * c.stride + t] = c.host_rows + static_cast<int64_t>(rng.below(4));
      return fmt::format("host row outside the pool for token {} of row {}", t, b);
    }
    c.host_loc[size_t(b) * c.stride + t] = -1;
    return fmt::format("no host copy for token {} of row {}", t, b);
  }
  return "";
}

bool run_side(Backend& backend, const Case& c, SideState& side, const std::vector<int32_t>& sel,
              const std::vector<int32_t>& n, int64_t step, std::string& error) {
  SwapInBatchView v;
  v.batch = c.B;
  v.H = c.H;
  v.top_k = c.K;
  v.slot_token = side.slot_token.data();
  v.lru = side.lru.data();
  v.selected = sel.data();
  v.seq_len = n.data();
  v.host_loc = c.host_loc.data();
  v.host_loc_stride = c.stride;
  v.row_bytes = c.row_bytes;
  v.host_pool = c.host_pool.data();
  v.host_rows = c.host_rows;
  v.device_kv = side.device_kv.data();
  v.step = step;
  try {
    backend.swap_in(v, side.result);
  } catch (const Error& e) {
    error = e.what();
    return false;
  }
  return true;
}

/// Every output (when the step was accepted), every state array and every device KV byte.
void compare_step(Checker& check, const std::string& at, bool accepted, const SideState& ref, const SideState& dut,
                  int32_t B, int32_t K, int64_t row_bytes) {
  if (accepted) {
    const auto& r = ref.result;
    const auto& d = dut.result;
    check.equal((at + "slot_of").c_str(), r.slot_of, d.slot_of);
    check.equal((at + "load_count").c_str(), r.load_count, d.load_count);
    if (check.ok()) {
      for (int32_t b = 0; b < B; ++b) {
        const size_t off = size_t(b) * K, cnt = size_t(r.load_count[b]);
        check.equal((at + fmt::format("row {} load_host", b)).c_str(), &r.load_host[off], &d.load_host[off], cnt);
        check.equal((at + fmt::format("row {} load_slot", b)).c_str(), &r.load_slot[off], &d.load_slot[off], cnt);
      }
    }
    check.counters((at + "counters").c_str(), r.counters.data(), d.counters.data(), r.counters.size());
  }
  check.equal((at + "slot_token").c_str(), ref.slot_token, dut.slot_token);
  check.equal((at + "lru").c_str(), ref.lru, dut.lru);
  check.bytes((at + "device_kv").c_str(), ref.device_kv.data(), dut.device_kv.data(), ref.device_kv.size(), row_bytes);
}

}  // namespace

void validate_swap_in(const ValidateContext& ctx, std::vector<OpReport>& out) {
  const size_t first = out.size();
  for (CopyMode m : kModes) out.push_back(OpReport{"swap-in", copy_mode_name(m)});
  const auto& o = ctx.options;
  for (int64_t ci = o.start_case; ci < o.start_case + o.cases; ++ci) {
    const uint64_t seed = case_seed(o.seed, "swap-in", ci);
    Rng rng(seed);
    const CopyMode mode = kModes[static_cast<size_t>(ci) % kModes.size()];
    OpReport& report = out[first + static_cast<size_t>(ci) % kModes.size()];
    ++report.cases;
    ctx.dut.set_copy_mode(mode);
    SideState ref_side;
    Case c = make_case(rng, ref_side);
    SideState dut_side = ref_side;
    const bool invalid_case = rng.chance(1, 20);
    Checker check(report, o.seed, ci, c.describe + fmt::format(", copy {}", copy_mode_name(mode)));
    std::vector<int32_t> n(c.B), sel(size_t(c.B) * c.K);
    bool rejected = false;
    for (int step = 0; step < c.steps && check.ok(); ++step) {
      for (int32_t b = 0; b < c.B; ++b) n[b] = c.n0[b] > 0 ? c.n0[b] + step : 0;
      for (int32_t b = 0; b < c.B; ++b)
        make_selection(rng, c, &ref_side.slot_token[size_t(b) * c.H], n[b], &sel[size_t(b) * c.K]);
      std::string injected;
      if (invalid_case && step == c.steps - 1) injected = inject_invalid(rng, c, n, sel, ref_side.slot_token.data());
      std::string ref_err, dut_err;
      const bool ref_ok = run_side(ctx.ref, c, ref_side, sel, n, step, ref_err);
      const bool dut_ok = run_side(ctx.dut, c, dut_side, sel, n, step, dut_err);
      const std::string at = fmt::format("step {}{}: ", step, injected.empty() ? "" : " (" + injected + ")");
      if (ref_ok != dut_ok) {
        check.fail(at + fmt::format("reference {}, device {}", ref_ok ? "accepted" : "rejected: " + ref_err,
                                    dut_ok ? "accepted" : "rejected: " + dut_err));
        break;
      }
      if (!ref_ok) rejected = true;
      compare_step(check, at, ref_ok, ref_side, dut_side, c.B, c.K, c.row_bytes);
      if (!ref_ok) break;
    }
    if (rejected && check.ok()) ++report.rejected_both;
  }
}

}  // namespace hisparse::validation

namespace hisparse::validation {

std::unique_ptr<traces::TraceSource> open_trace_spec(const std::string& spec, uint64_t seed) {
  if (spec.rfind("gen:", 0) != 0) return traces::open_trace(spec);
  std::string rest = spec.substr(4), preset = rest;
  const size_t colon = rest.find(':');
  if (colon != std::string::npos) preset = rest.substr(0, colon);
  traces::GeneratorOptions g = traces::generator_preset(preset);
  g.seed = seed;
  if (rest.find(":shuffle") != std::string::npos) g.shuffle = true;
  if (rest.find(":empty") != std::string::npos) g.initial_state = InitialState::kEmpty;
  return traces::make_generated_trace(g);
}

void validate_swap_in_trace(const ValidateContext& ctx, std::vector<OpReport>& out) {
  const auto& o = ctx.options;
  if (o.trace.empty()) return;
  const int32_t K = open_trace_spec(o.trace, o.seed)->meta().top_k;
  ctx.dut.set_copy_mode(CopyMode::kFused);
  for (const int32_t H : {K, 2 * K}) {
    out.push_back(OpReport{"swap-in-trace", fmt::format("H={}", H)});
    OpReport& report = out.back();
    auto src = open_trace_spec(o.trace, o.seed);
    const traces::TraceMeta& meta = src->meta();
    Case c;
    c.B = meta.layers;
    c.H = H;
    c.K = meta.top_k;
    c.row_bytes = 64;
    c.host_rows = 4099;
    Rng rng(case_seed(o.seed, "swap-in-trace", H));
    c.host_pool.resize(size_t(c.host_rows * c.row_bytes));
    rng.fill_bytes(c.host_pool.data(), c.host_pool.size());
    SideState ref_side, dut_side;
    traces::StepRecord rec;
    int64_t current = -1, records = 0;
    std::vector<int32_t> n(c.B);
    while (src->next(rec)) {
      if (o.trace_steps > 0 && records >= o.trace_steps) break;
      if (rec.request_id != current) {  // a new request: fresh buffers in the trace's initial state
        current = rec.request_id;
        ref_side.slot_token.assign(size_t(c.B) * H, -1);
        ref_side.lru.resize(size_t(c.B) * H);
        for (int32_t b = 0; b < c.B; ++b)
          for (int32_t i = 0; i < H; ++i) {
            ref_side.lru[size_t(b) * H + i] = i;
            if (meta.initial_state == InitialState::kIdentity) ref_side.slot_token[size_t(b) * H + i] = i;
          }
        ref_side.device_kv.resize(size_t(c.B) * (H + 1) * c.row_bytes);
        rng.fill_bytes(ref_side.device_kv.data(), ref_side.device_kv.size());
        dut_side = ref_side;
      }
      ++records;
      ++report.cases;
      std::fill(n.begin(), n.end(), rec.seq_len);
      c.stride = std::max<int32_t>(1, rec.seq_len);
      c.host_loc.resize(size_t(c.B) * c.stride);
      for (int32_t b = 0; b < c.B; ++b)
        for (int64_t t = 0; t < c.stride; ++t)
          c.host_loc[size_t(b) * c.stride + t] = (t * 7919 + int64_t(b) * 104729) % c.host_rows;
      Checker check(report, o.seed, records - 1,
                    fmt::format("trace {} request {} step {} H={}", o.trace, rec.request_id, rec.step, H));
      std::string ref_err, dut_err;
      const bool ref_ok = run_side(ctx.ref, c, ref_side, rec.positions, n, rec.step, ref_err);
      const bool dut_ok = run_side(ctx.dut, c, dut_side, rec.positions, n, rec.step, dut_err);
      if (ref_ok != dut_ok) {
        check.fail(fmt::format("reference {}, device {}", ref_ok ? "accepted" : "rejected: " + ref_err,
                               dut_ok ? "accepted" : "rejected: " + dut_err));
        break;
      }
      if (!ref_ok) ++report.rejected_both;
      compare_step(check, "", ref_ok, ref_side, dut_side, c.B, c.K, c.row_bytes);
      if (!check.ok()) break;  // the states diverged: later steps would only repeat the news
    }
  }
}

}  // namespace hisparse::validation
