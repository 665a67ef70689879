// @brief Model-based test: >= 1,000,000 random pool operations, each checked against a plain reference model.
//
// Operation count: env HISPARSE_MODEL_OPS (default 1,000,000). Every step compares every index of every pool
// (owner, mapping, host page) with the model, so the sizes are kept small enough for pools to fill up often.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpu_ref/memory/memory.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

namespace {

constexpr int64_t kPage = 4;
constexpr int64_t kDevice = 64;  // device rows (16 pages)
constexpr int64_t kRatio = 3;    // logical 192 tokens, host 192 tokens
constexpr int64_t kH = 8;
constexpr int64_t kReqs = 6;
constexpr int64_t kCtx = 48;
constexpr int64_t kTokenPool = 48;
constexpr int kTokenOwners = 3;

int64_t ops_from_env() {
  const char* s = std::getenv("HISPARSE_MODEL_OPS");
  if (s == nullptr || *s == '\0') return 1000000;
  return std::max<int64_t>(1, std::strtoll(s, nullptr, 10));
}

/// A pool seen as plain arrays: owner of each index and of each page.
struct PagedModel {
  std::vector<Owner> token;  // [index_limit]
  std::vector<Owner> page;   // [num_pages + 1]
  int64_t owned_pages = 0;
  int64_t live = 0;
  explicit PagedModel(int64_t size) : token(static_cast<size_t>(size + kPage), kNoOwner),
                                      page(static_cast<size_t>(size / kPage + 1), kNoOwner) {}
  int64_t free_pages() const { return static_cast<int64_t>(page.size()) - 1 - owned_pages; }
  // Records an allocation; the index must be free and its page free (fresh) or already the owner's.
  void take(int64_t i, Owner o, bool fresh_page_expected) {
    REQUIRE(i >= kPage);
    REQUIRE(i < static_cast<int64_t>(token.size()));
    REQUIRE(token[static_cast<size_t>(i)] == kNoOwner);  // no index owned twice
    auto& p = page[static_cast<size_t>(i / kPage)];
    if (p == kNoOwner) {
      REQUIRE(fresh_page_expected);
      p = o;
      ++owned_pages;
    } else {
      REQUIRE(p == o);
    }
    token[static_cast<size_t>(i)] = o;
    ++live;
  }
  void drop(int64_t i, Owner o) {
    REQUIRE(token[static_cast<size_t>(i)] == o);
    token[static_cast<size_t>(i)] = kNoOwner;
    --live;
    const int64_t pg = i / kPage;
    bool any = false;
    for (int64_t k = pg * kPage; k < (pg + 1) * kPage; ++k) any = any || token[static_cast<size_t>(k)] != kNoOwner;
    if (!any) {
      page[static_cast<size_t>(pg)] = kNoOwner;
      --owned_pages;
    }
  }
  void compare(const PagedTokenToKVPoolAllocator& a, const char* name) const {
    INFO(name);
    REQUIRE(a.used_size() == live);  // used + free = total, counted both ways
    REQUIRE(a.available_size() + a.owned_pages() * kPage == a.size());
    REQUIRE(a.owned_pages() == owned_pages);
    for (size_t i = 0; i < token.size(); ++i) {
      if (a.owner_of(static_cast<int64_t>(i)) != token[i]) {
        FAIL(name << ": index " << i << " owner " << a.owner_of(static_cast<int64_t>(i)) << " model " << token[i]);
      }
    }
  }
};

struct ReqModel {
  bool active = false, admitted = false, logical_only = false, skip = false;
  std::vector<int64_t> locs;      // logical index of each token
  std::vector<int64_t> dev_rows;  // device row of each token before admission (colocated path)
  std::vector<int64_t> buffer;
  std::vector<int64_t> host;      // host row of each token, -1 = none
  std::vector<int64_t> host_pages;
};

struct World {
  ReqToTokenPool req_to_token{kReqs, kCtx};
  HiSparseTokenToKVPoolAllocator pair{kDevice, kPage, kRatio};
  HostPool host{kDevice, kRatio, kPage, 2, 16, kReqs, kCtx};
  HiSparseCoordinator coord{req_to_token, pair, host, kH};
  TokenToKVPoolAllocator tokens{kTokenPool};

  PagedModel logical{kDevice * kRatio};
  PagedModel device{kDevice};
  std::vector<int64_t> mapping = std::vector<int64_t>(static_cast<size_t>(kDevice * kRatio + kPage), 0);
  std::vector<Owner> host_page = std::vector<Owner>(static_cast<size_t>(kDevice * kRatio / kPage), kNoOwner);
  int64_t host_free_pages = kDevice * kRatio / kPage;
  std::vector<ReqModel> reqs = std::vector<ReqModel>(kReqs);
  int64_t active_reqs = 0;
  std::vector<Owner> token_owner = std::vector<Owner>(kTokenPool + 1, kNoOwner);
  int64_t token_live = 0;
  int64_t token_pending = 0;
  bool in_group = false;
  int64_t n_oom = 0, n_admit = 0, n_decode = 0, n_finish = 0, n_extend = 0;

  std::mt19937_64 rng{20250611};
  int64_t pick(int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }

  int64_t cap_for(int64_t n) const { return coord.capacity_for(n); }
  int64_t dev_avail_pages() const { return device.free_pages(); }

  // Host rows must follow the page pattern: same page for the same position/page, offset = position % page.
  void check_host_rows(int64_t r, int64_t start, const std::vector<int64_t>& rows) {
    ReqModel& m = reqs[static_cast<size_t>(r)];
    for (size_t k = 0; k < rows.size(); ++k) {
      const int64_t pos = start + static_cast<int64_t>(k);
      const auto pi = static_cast<size_t>(pos / kPage);
      REQUIRE(rows[k] % kPage == pos % kPage);
      if (pi == m.host_pages.size()) {
        const int64_t pg = rows[k] / kPage;
        REQUIRE(host_page[static_cast<size_t>(pg)] == kNoOwner);
        host_page[static_cast<size_t>(pg)] = r;
        --host_free_pages;
        m.host_pages.push_back(pg);
      }
      REQUIRE(rows[k] / kPage == m.host_pages[pi]);
      REQUIRE(m.host[static_cast<size_t>(pos)] == -1);
      m.host[static_cast<size_t>(pos)] = rows[k];
    }
  }
  int64_t host_pages_needed(const ReqModel& m, int64_t end) const {
    const auto have = static_cast<int64_t>(m.host_pages.size()) * kPage;
    return end > have ? (end - have + kPage - 1) / kPage : 0;
  }

  void compare_all() {
    logical.compare(pair.logical(), "logical");
    device.compare(pair.device(), "device");
    REQUIRE(pair.mapping() == mapping);
    REQUIRE(pair.available_size() == std::min(logical.free_pages(), device.free_pages()) * kPage);
    REQUIRE(host.available_size() == host_free_pages * kPage);
    for (int64_t p = 0; p < host.num_pages(); ++p) {
      if (host.page_owner(p) != host_page[static_cast<size_t>(p)]) FAIL("host page " << p << " owner differs");
    }
    REQUIRE(tokens.used_size() == token_live);
    REQUIRE(tokens.available_size() + token_live + token_pending == kTokenPool);
    for (int64_t i = 0; i <= kTokenPool; ++i) {
      if (tokens.owner_of(i) != token_owner[static_cast<size_t>(i)]) FAIL("token index " << i << " owner differs");
    }
    REQUIRE(req_to_token.available_size() == kReqs - active_reqs);
  }

  // ---- token allocator ops ----
  void token_alloc() {
    const int64_t n = 1 + pick(6);
    const Owner o = pick(kTokenOwners);
    if (n > kTokenPool - token_live - token_pending) {
      REQUIRE_THROWS_AS(tokens.alloc(n, o), OutOfMemoryError);
      ++n_oom;
      return;
    }
    for (int64_t i : tokens.alloc(n, o)) {
      REQUIRE(i >= 1);
      REQUIRE(token_owner[static_cast<size_t>(i)] == kNoOwner);
      token_owner[static_cast<size_t>(i)] = o;
      ++token_live;
    }
  }
  void token_free() {
    const Owner o = pick(kTokenOwners);
    std::vector<int64_t> mine;
    for (int64_t i = 1; i <= kTokenPool; ++i) {
      if (token_owner[static_cast<size_t>(i)] == o && pick(2) == 0) mine.push_back(i);
    }
    std::shuffle(mine.begin(), mine.end(), rng);
    tokens.free(mine, o);
    for (int64_t i : mine) token_owner[static_cast<size_t>(i)] = kNoOwner;
    token_live -= static_cast<int64_t>(mine.size());
    if (in_group) token_pending += static_cast<int64_t>(mine.size());
  }
  void token_bad_free() {
    const int64_t i = pick(kTokenPool + 3) - 1;  // -1 .. size+1
    const Owner held = (i >= 1 && i <= kTokenPool) ? token_owner[static_cast<size_t>(i)] : kNoOwner;
    const Owner o = held == kNoOwner ? pick(kTokenOwners) : (held + 1) % kTokenOwners;
    REQUIRE_THROWS_AS(tokens.free(std::vector<int64_t>{i}, o), Error);
  }
  void token_group() {
    if (in_group) {
      tokens.free_group_end();
      token_pending = 0;
    } else {
      tokens.free_group_begin();
    }
    in_group = !in_group;
  }

  // ---- coordinator ops ----
  int64_t random_req(bool want_active) {
    std::vector<int64_t> c;
    for (int64_t r = 0; r < kReqs; ++r) {
      if (reqs[static_cast<size_t>(r)].active == want_active) c.push_back(r);
    }
    return c.empty() ? -1 : c[static_cast<size_t>(pick(static_cast<int64_t>(c.size())))];
  }

  void do_extend(int64_t r, int64_t t, bool logical_only) {
    ReqModel& m = reqs[static_cast<size_t>(r)];
    const auto prefix = static_cast<int64_t>(m.locs.size());
    const int64_t pages = num_new_pages_extend(prefix, prefix + t, kPage);
    const bool oom = pages > logical.free_pages() || (!logical_only && pages > device.free_pages());
    if (oom) {
      REQUIRE_THROWS_AS(logical_only ? coord.extend_logical_only(r, t) : coord.extend(r, t), OutOfMemoryError);
      ++n_oom;
      return;
    }
    const std::vector<int64_t> locs = logical_only ? coord.extend_logical_only(r, t) : coord.extend(r, t);
    ++n_extend;
    REQUIRE(static_cast<int64_t>(locs.size()) == t);
    for (int64_t k = 0; k < t; ++k) {
      const int64_t pos = prefix + k;
      const int64_t l = locs[static_cast<size_t>(k)];
      REQUIRE(l % kPage == pos % kPage);  // the page pattern: offset in page = position in page
      if (pos % kPage != 0) REQUIRE(l == m.locs.back() + 1);
      logical.take(l, r, pos % kPage == 0);
      m.locs.push_back(l);
      m.host.push_back(-1);
      if (!logical_only) {
        const int64_t d = pair.translate(l);
        REQUIRE(d % kPage == pos % kPage);
        if (pos % kPage != 0) REQUIRE(d == m.dev_rows.back() + 1);
        device.take(d, r, pos % kPage == 0);
        m.dev_rows.push_back(d);
        mapping[static_cast<size_t>(l)] = d;
      }
    }
    m.logical_only = logical_only;
  }

  void new_request() {
    if (active_reqs == kReqs) {
      REQUIRE_THROWS_AS(coord.add_request(), OutOfMemoryError);
      ++n_oom;
      return;
    }
    const int64_t r = coord.add_request();
    ReqModel& m = reqs[static_cast<size_t>(r)];
    REQUIRE(!m.active);
    m = ReqModel{};
    m.active = true;
    ++active_reqs;
    const bool logical_only = pick(3) == 0;
    const int64_t t = 1 + pick(pick(4) == 0 ? 24 : 10);
    do_extend(r, t, logical_only);
    if (m.locs.empty()) finish(r);  // could not prefill: give the slot back
  }

  void chunk() {
    const int64_t r = random_req(true);
    if (r < 0) return;
    ReqModel& m = reqs[static_cast<size_t>(r)];
    const auto n = static_cast<int64_t>(m.locs.size());
    if (m.admitted) {
      REQUIRE_THROWS_AS(coord.extend(r, 1), Error);
      return;
    }
    if (n >= kCtx) return;
    const int64_t t = 1 + pick(std::min<int64_t>(8, kCtx - n));
    do_extend(r, t, m.logical_only);
  }

  void admit() {
    const int64_t r = random_req(true);
    if (r < 0) return;
    ReqModel& m = reqs[static_cast<size_t>(r)];
    if (m.admitted) {
      REQUIRE_THROWS_AS(coord.admit_staged(r), Error);
      return;
    }
    const auto n = static_cast<int64_t>(m.locs.size());
    const int64_t cap = cap_for(n);
    const int64_t padded = (n + kPage - 1) / kPage * kPage;
    const int64_t fresh = m.logical_only ? cap : std::max<int64_t>(0, cap - padded);
    if (host_pages_needed(m, n) > host_free_pages || fresh > dev_avail_pages() * kPage) {
      REQUIRE_THROWS_AS(m.logical_only ? coord.admit_direct(r) : coord.admit_staged(r), OutOfMemoryError);
      ++n_oom;
      return;
    }
    const AdmitPlan plan = m.logical_only ? coord.admit_direct(r) : coord.admit_staged(r);
    const std::vector<int64_t>& buf = coord.buffer(r);
    REQUIRE(static_cast<int64_t>(buf.size()) == cap);
    std::vector<int64_t> expect;  // buffer rows the model knows in advance
    if (!m.logical_only) {
      REQUIRE(plan.backup.device == m.dev_rows);
      for (int64_t l : m.locs) mapping[static_cast<size_t>(l)] = 0;
      expect.assign(m.dev_rows.begin(), m.dev_rows.begin() + std::min(n, cap));
      for (int64_t k = cap; k < n; ++k) device.drop(m.dev_rows[static_cast<size_t>(k)], r);
      if (n < cap) {
        for (int64_t d = m.dev_rows.back() + 1; d % kPage != 0; ++d) {
          expect.push_back(d);
          device.take(d, r, false);
        }
      }
    }
    for (size_t k = 0; k < buf.size(); ++k) {
      if (k < expect.size()) {
        REQUIRE(buf[k] == expect[k]);
      } else {
        REQUIRE(buf[k] % kPage == static_cast<int64_t>(k) % kPage);
        device.take(buf[k], r, buf[k] % kPage == 0);
      }
    }
    std::vector<int64_t> host_rows = plan.backup.host;
    if (m.logical_only) {
      host_rows.clear();
      for (int64_t pos = 0; pos < n; ++pos) host_rows.push_back(host.host_loc(r, pos));
      if (n <= kH) REQUIRE(plan.preload.host == host_rows);
    }
    check_host_rows(r, 0, host_rows);
    if (m.logical_only) {
      if (n > kH) {
        REQUIRE(plan.preload.empty());
        REQUIRE(coord.slot_token(r) == std::vector<int32_t>(kH, -1));
      } else {
        REQUIRE(plan.preload.device == std::vector<int64_t>(buf.begin(), buf.begin() + n));
      }
    } else {
      REQUIRE(plan.initial == InitialState::kIdentity);
    }
    m.buffer = buf;
    ++n_admit;
    m.admitted = true;
    m.skip = true;
    m.dev_rows.clear();
  }

  void finish(int64_t r) {
    ReqModel& m = reqs[static_cast<size_t>(r)];
    coord.finish(r);
    ++n_finish;
    for (int64_t l : m.locs) {
      logical.drop(l, r);
      mapping[static_cast<size_t>(l)] = 0;
    }
    for (int64_t d : m.dev_rows) device.drop(d, r);
    for (int64_t d : m.buffer) device.drop(d, r);
    for (int64_t p : m.host_pages) host_page[static_cast<size_t>(p)] = kNoOwner;
    host_free_pages += static_cast<int64_t>(m.host_pages.size());
    m = ReqModel{};
    --active_reqs;
  }

  void decode_op() {
    const int64_t r = random_req(true);
    if (r < 0) return;
    ReqModel& m = reqs[static_cast<size_t>(r)];
    if (!m.admitted) {
      REQUIRE_THROWS_AS(coord.decode(r), Error);
      return;
    }
    const auto n = static_cast<int64_t>(m.locs.size()) + 1;
    if (n > kCtx) {
      REQUIRE_THROWS_AS(coord.decode(r), Error);
      finish(r);
      return;
    }
    const auto cap = static_cast<int64_t>(m.buffer.size());
    const int64_t grow = (n <= kH && n > cap) ? cap_for(n) - cap : 0;
    const bool oom = ((n - 1) % kPage == 0 && logical.free_pages() == 0) ||
                     (!m.skip && host_pages_needed(m, n - 1) > host_free_pages) || grow > dev_avail_pages() * kPage;
    if (oom) {
      REQUIRE_THROWS_AS(coord.decode(r), OutOfMemoryError);
      ++n_oom;
      return;
    }
    const DecodePlan d = coord.decode(r);
    ++n_decode;
    if (m.skip) {
      REQUIRE(d.backup.empty());
      m.skip = false;
    } else {
      REQUIRE(d.backup.device == std::vector<int64_t>{m.buffer[static_cast<size_t>(std::min(n - 2, kH))]});
      check_host_rows(r, n - 2, d.backup.host);
    }
    const int64_t pos = n - 1;
    REQUIRE(d.logical_loc % kPage == pos % kPage);
    if (pos % kPage != 0) REQUIRE(d.logical_loc == m.locs.back() + 1);
    logical.take(d.logical_loc, r, pos % kPage == 0);
    REQUIRE(d.grown_slots == grow);
    const std::vector<int64_t>& buf = coord.buffer(r);
    REQUIRE(static_cast<int64_t>(buf.size()) == cap + grow);
    for (int64_t k = cap; k < cap + grow; ++k) {
      REQUIRE(std::equal(m.buffer.begin(), m.buffer.end(), buf.begin()));
      REQUIRE(buf[static_cast<size_t>(k)] % kPage == k % kPage);
      device.take(buf[static_cast<size_t>(k)], r, k % kPage == 0);
    }
    m.buffer = buf;
    const int64_t slot = std::min(pos, kH);
    REQUIRE(d.device_loc == m.buffer[static_cast<size_t>(slot)]);
    if (slot == kH && mapping[static_cast<size_t>(m.locs.back())] == d.device_loc) {
      mapping[static_cast<size_t>(m.locs.back())] = 0;
    }
    mapping[static_cast<size_t>(d.logical_loc)] = d.device_loc;
    m.locs.push_back(d.logical_loc);
    m.host.push_back(-1);
  }

  void bad_coordinator_op() {
    const int64_t r = random_req(false);
    if (r >= 0) {
      REQUIRE_THROWS_AS(coord.finish(r), Error);
      REQUIRE_THROWS_AS(coord.decode(r), Error);
    }
    REQUIRE_THROWS_AS(coord.finish(kReqs), Error);
  }

  void step() {
    const int64_t op = pick(100);
    if (op < 10) {
      token_alloc();
    } else if (op < 18) {
      token_free();
    } else if (op < 20) {
      token_bad_free();
    } else if (op < 21) {
      token_group();
    } else if (op < 29) {
      new_request();
    } else if (op < 35) {
      chunk();
    } else if (op < 43) {
      admit();
    } else if (op < 90) {
      decode_op();
    } else if (op < 98) {
      const int64_t r = random_req(true);
      if (r >= 0) finish(r);
    } else {
      bad_coordinator_op();
    }
  }
};

}  // namespace

TEST_CASE("memory model: random alloc/extend/decode/free/admit/finish against a reference model") {
  const int64_t ops = ops_from_env();
  World w;
  int64_t admitted_ever = 0;
  int64_t max_seq = 0;
  for (int64_t i = 0; i < ops; ++i) {
    w.step();
    w.compare_all();
    if (i % 4096 == 0) {
      w.coord.check_invariants();
      w.tokens.check_invariants();
    }
    for (const ReqModel& m : w.reqs) {
      if (m.admitted) ++admitted_ever;
      max_seq = std::max<int64_t>(max_seq, static_cast<int64_t>(m.locs.size()));
    }
  }
  // Teardown: finish everything, empty the token allocator, and nothing may remain held.
  for (int64_t r = 0; r < kReqs; ++r) {
    if (w.reqs[static_cast<size_t>(r)].active) w.finish(r);
  }
  if (w.in_group) w.token_group();
  for (Owner o = 0; o < kTokenOwners; ++o) {
    std::vector<int64_t> mine;
    for (int64_t i = 1; i <= kTokenPool; ++i) {
      if (w.token_owner[static_cast<size_t>(i)] == o) mine.push_back(i);
    }
    w.tokens.free(mine, o);
  }
  w.coord.check_invariants();
  w.tokens.check_invariants();
  CHECK(w.coord.leaks().empty());
  CHECK(w.tokens.owned_indices().empty());
  CHECK(max_seq > kH);        // the slow-path regime (reserved slot) was reached
  CHECK(admitted_ever > 0);
  MESSAGE("memory model test ran " << ops << " random operations (HISPARSE_MODEL_OPS): " << w.n_extend
          << " extends, " << w.n_admit << " admissions, " << w.n_decode << " decode steps, " << w.n_finish
          << " finishes, " << w.n_oom << " predicted out-of-memory errors; longest request " << max_seq << " tokens");
  CHECK(w.n_oom > 0);  // the pools were driven to exhaustion
}
