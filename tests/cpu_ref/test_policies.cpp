// @brief Property tests of every swap-in policy on random traces: belady is a lower bound on misses, nobody
// evicts a slot the step hits, plans are consistent, compulsory misses only when everything fits, same errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "traces/trace_limits.h"

using namespace hisparse;
using namespace hisparse::cpu_ref;

namespace {

struct RandomTrace {
  int32_t top_k = 0;
  std::vector<std::vector<int32_t>> steps;
  std::vector<int32_t> ns;
};

/// Steps that keep part of the previous selection, revisit older positions and add recent ones; n grows by one
/// per step from first_n. universe > 0 draws all positions below it (so the distinct set is bounded).
RandomTrace make_trace(uint64_t seed, int32_t top_k, int32_t steps, int32_t first_n, int32_t universe = 0) {
  std::mt19937_64 rng(seed);
  RandomTrace tr;
  tr.top_k = top_k;
  std::vector<int32_t> prev;
  for (int32_t j = 0; j < steps; ++j) {
    const int32_t n = first_n + j;
    const int32_t limit = universe > 0 ? std::min(universe, n) : n;
    std::set<int32_t> chosen;
    std::vector<int32_t> sel;
    const int32_t want = top_k - static_cast<int32_t>(rng() % (top_k / 4 + 1));
    const int32_t keep_pct = static_cast<int32_t>(rng() % 100);
    for (int32_t p : prev) {
      if (static_cast<int32_t>(sel.size()) < want && p < limit && static_cast<int32_t>(rng() % 100) < keep_pct &&
          chosen.insert(p).second) {
        sel.push_back(p);
      }
    }
    if (rng() % 2 && n - 1 < limit && static_cast<int32_t>(sel.size()) < want && chosen.insert(n - 1).second) {
      sel.push_back(n - 1);
    }
    for (int tries = 0; static_cast<int32_t>(sel.size()) < want && tries < 8 * top_k; ++tries) {
      const int32_t p = rng() % 3 ? limit - 1 - static_cast<int32_t>(rng() % std::min(limit, 3 * top_k))
                                  : static_cast<int32_t>(rng() % limit);
      if (chosen.insert(p).second) sel.push_back(p);
    }
    // Shuffle with our own mapping (order within a step matters: misses are assigned in list order).
    for (size_t i = sel.size(); i > 1; --i) std::swap(sel[i - 1], sel[rng() % i]);
    if (rng() % 4 == 0 && static_cast<int32_t>(sel.size()) < top_k) {
      sel.insert(sel.begin() + static_cast<long>(rng() % (sel.size() + 1)), -1);
    }
    prev.clear();
    for (int32_t p : sel) if (p >= 0) prev.push_back(p);
    tr.steps.push_back(sel);
    tr.ns.push_back(n);
  }
  return tr;
}

std::shared_ptr<const LayerFuture> future_of(const RandomTrace& tr, int32_t H) {
  std::vector<const int32_t*> sel;
  std::vector<int32_t> counts;
  for (const auto& s : tr.steps) {
    sel.push_back(s.data());
    counts.push_back(static_cast<int32_t>(s.size()));
  }
  return std::make_shared<const LayerFuture>(build_layer_future(sel, counts, tr.ns, H));
}

struct Totals {
  int64_t misses = 0, hits = 0, newest = 0, selected = 0;
};

/// Runs one policy over the trace, checking every step's plan against the policy's slots; returns the totals.
Totals run_policy(const std::string& name, const RandomTrace& tr, int32_t H, InitialState initial,
                  std::vector<int64_t>* misses_per_step = nullptr) {
  auto p = make_policy(name);
  p->reset(H, initial);
  if (p->needs_future()) p->set_future(future_of(tr, H));
  SwapInScratch scratch;
  SwapInPlan plan;
  Totals tot;
  for (size_t j = 0; j < tr.steps.size(); ++j) {
    const auto& T = tr.steps[j];
    const int32_t n = tr.ns[j];
    std::vector<int32_t> before(p->slot_token(), p->slot_token() + H);
    if (j == 0 && n <= H) {
      for (int32_t s = 0; s < H; ++s) before[s] = s;  // admitted short: preloaded, identity (docs/swap_in.md)
    }
    StepInput in{T.data(), static_cast<int32_t>(T.size()), n, tr.top_k, nullptr, 100};
    p->step(in, {1, 2, static_cast<int64_t>(j)}, plan, scratch);
    const SwapInCounters& c = plan.counters;
    INFO("policy " << name << " step " << j << " n " << n << " H " << H);
    REQUIRE(c.selected == c.hits + c.newest_hits + c.misses);
    REQUIRE(c.h2d_bytes == 100 * c.misses);
    REQUIRE(plan.load_slot.size() == static_cast<size_t>(c.misses));
    REQUIRE(c.fast_path == (n <= H));
    const int32_t* after = p->slot_token();
    std::set<int32_t> hit_slots;
    for (size_t i = 0; i < T.size(); ++i) {
      const int32_t s = plan.slot_of[i];
      if (T[i] < 0) {
        REQUIRE(s == -1);
        continue;
      }
      if (n <= H) {
        REQUIRE(s == T[i]);
      } else if (T[i] == n - 1) {
        REQUIRE(s == H);
      } else {
        REQUIRE(s >= 0);
        REQUIRE(s < H);
        REQUIRE(after[s] == T[i]);  // the slot holds the entry's token after the step
        if (before[s] == T[i]) hit_slots.insert(s);
      }
    }
    // No load lands in a slot that this step hits, and no slot is loaded twice.
    std::set<int32_t> loaded(plan.load_slot.begin(), plan.load_slot.end());
    REQUIRE(loaded.size() == plan.load_slot.size());
    for (int32_t s : plan.load_slot) REQUIRE(hit_slots.count(s) == 0);
    REQUIRE(static_cast<int64_t>(hit_slots.size()) == c.hits * (n > H));
    for (size_t m = 0; m < plan.load_host.size(); ++m) REQUIRE(after[plan.load_slot[m]] == plan.load_host[m]);
    // Slots neither hit nor loaded keep their token (topk-only drops them: it keeps only this step's top-k).
    for (int32_t s = 0; s < H; ++s) {
      if (hit_slots.count(s) || loaded.count(s)) continue;
      if (name == "topk-only" && n > H) {
        if (after[s] != before[s]) REQUIRE(after[s] == -1);
      } else if (after[s] != before[s]) {
        // Only a slot holding the newest token (n did not grow) may be touched otherwise; never here.
        FAIL("slot " << s << " changed from " << before[s] << " to " << after[s] << " without a load");
      }
    }
    tot.misses += c.misses;
    tot.hits += c.hits;
    tot.newest += c.newest_hits;
    tot.selected += c.selected;
    if (misses_per_step) misses_per_step->push_back(c.misses);
  }
  return tot;
}

/// The policies of the common frame at any buffer size. hisparse-v2 leaves the frame on purpose (no fast path, no
/// reserved slot, H a power of two: tests/cpu_ref/test_swap_in_v2.cpp) and set-assoc needs H = shards x ways (run
/// below as set-assoc:1xH, one fully associative shard, and set-assoc:Sx2 where H is even).
std::vector<std::string> all_policies(int32_t H = 0) {
  std::vector<std::string> names;
  for (const auto& e : policy_registry()) {
    const std::string name = e.name;
    if (name == "hisparse-v2" || name == "set-assoc") continue;
    names.push_back(name);
  }
  if (H > 0) {
    names.push_back("set-assoc:1x" + std::to_string(H));
    if (H % 2 == 0) names.push_back("set-assoc:" + std::to_string(H / 2) + "x2");
  }
  return names;
}

}  // namespace

TEST_CASE("policy registry: explicit list, unique names, unknown names are an error listing the known ones") {
  const auto names = all_policies();
  CHECK(names.front() == "sglang-lru");
  for (const char* want : {"sglang-lru", "belady", "topk-only", "fifo", "lfu", "clock"}) {
    CHECK(std::count(names.begin(), names.end(), want) == 1);
    CHECK(std::string(make_policy(want)->name()) == want);
  }
  CHECK(names.size() == 6);
  // The two policies outside the common frame, each with its parameter form; a malformed parameter is an error.
  const auto registered = [] {
    std::vector<std::string> all;
    for (const auto& e : policy_registry()) all.push_back(e.name);
    return all;
  }();
  CHECK(registered.size() == 8);
  CHECK(std::string(make_policy("hisparse-v2")->name()) == "hisparse-v2");
  CHECK(std::string(make_policy("hisparse-v2:16")->name()) == "hisparse-v2");
  CHECK(std::string(make_policy("set-assoc:256x32")->name()) == "set-assoc");
  CHECK_THROWS_WITH_AS(make_policy("set-assoc:256"), doctest::Contains("expected set-assoc:SxW"), Error);
  CHECK_THROWS_WITH_AS(make_policy("hisparse-v2:0"), doctest::Contains("positive page size"), Error);
  CHECK_THROWS_WITH_AS(make_policy("fifo:3"), doctest::Contains("takes no argument"), Error);
  try {
    make_policy("lru2");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("unknown swap-in policy 'lru2'") != std::string::npos);
    CHECK(std::string(e.what()).find("belady") != std::string::npos);
  }
}

TEST_CASE("policies: belady has the fewest misses; plans are consistent; no hit slot is evicted") {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    const int32_t K = 2 + static_cast<int32_t>(rng() % 24);
    const int32_t H = K + static_cast<int32_t>(rng() % (2 * K + 1));
    const InitialState initial = rng() % 2 ? InitialState::kIdentity : InitialState::kEmpty;
    // Start a little below H so identity traces cross the fast/slow switch at n = H + 1.
    const int32_t first_n = std::max<int32_t>(1, H - 3 + static_cast<int32_t>(rng() % 3));
    const RandomTrace tr = make_trace(seed, K, 80, first_n);
    INFO("seed " << seed << " K " << K << " H " << H << " identity " << (initial == InitialState::kIdentity));
    std::map<std::string, Totals> totals;
    for (const auto& name : all_policies(H)) totals[name] = run_policy(name, tr, H, initial);
    for (const auto& [name, t] : totals) {
      INFO("policy " << name << " misses " << t.misses << " belady " << totals["belady"].misses);
      CHECK(totals["belady"].misses <= t.misses);
      CHECK(t.selected == totals["sglang-lru"].selected);  // same trace, same counting
      CHECK(t.newest == totals["sglang-lru"].newest);
    }
  }
}

TEST_CASE("policies: when the buffer holds every position ever selected, only compulsory misses remain") {
  // Empty initial state: the compulsory misses are the first slow-path selections of each position that is not
  // that step's newest token (identity would pre-fill all H slots, so a new position must evict something).
  // topk-only is excluded on purpose: it drops everything the previous step did not select, so it re-misses.
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    std::mt19937_64 rng(seed * 104729);
    const int32_t K = 2 + static_cast<int32_t>(rng() % 20);
    const int32_t universe = K + static_cast<int32_t>(rng() % (3 * K));
    const int32_t H = universe + static_cast<int32_t>(rng() % 3);  // >= distinct positions ever selected
    const RandomTrace tr = make_trace(seed, K, 70, H + 1, universe);
    std::set<int32_t> seen;
    std::vector<int64_t> compulsory;
    for (size_t j = 0; j < tr.steps.size(); ++j) {
      int64_t c = 0;
      for (int32_t p : tr.steps[j]) {
        if (p >= 0 && p != tr.ns[j] - 1 && seen.insert(p).second) ++c;
      }
      compulsory.push_back(c);
    }
    INFO("seed " << seed << " K " << K << " H " << H << " universe " << universe);
    for (const auto& name : all_policies(H)) {
      if (name == "topk-only") continue;
      // Several shards also have conflict misses (a shard full while others have room); one shard has none.
      if (name.rfind("set-assoc:", 0) == 0 && name.rfind("set-assoc:1x", 0) != 0) continue;
      std::vector<int64_t> per_step;
      run_policy(name, tr, H, InitialState::kEmpty, &per_step);
      INFO("policy " << name);
      CHECK(per_step == compulsory);
    }
  }
}

TEST_CASE("set-assoc: shards hold their tokens; one shard is LRU over the slots; conflicts cost misses") {
  // With S shards, every token loaded since the start sits in its home shard unless that shard overflowed; with one
  // shard the policy is an LRU over slots, so its misses equal the contract's (sglang-lru) on every step.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed * 31337);
    const int32_t K = 2 + static_cast<int32_t>(rng() % 16);
    const int32_t H = K + static_cast<int32_t>(rng() % (2 * K + 1));
    const RandomTrace tr = make_trace(seed, K, 60, H + 1);
    std::vector<int64_t> lru, one_shard;
    for (const InitialState init : {InitialState::kIdentity, InitialState::kEmpty}) {
      lru.clear();
      one_shard.clear();
      run_policy("sglang-lru", tr, H, init, &lru);
      run_policy("set-assoc:1x" + std::to_string(H), tr, H, init, &one_shard);
      INFO("seed " << seed << " K " << K << " H " << H);
      CHECK(one_shard == lru);
    }
  }
  // 2 shards x 2 ways, empty start, n = 9 > H = 4: shard(t) = ((t * 2654435761) mod 2^32) * 2 >> 32, here
  // shard(0) = 0, shard(1) = 1, shard(2) = 0, shard(3) = 1, shard(5) = 0. Step 1 loads 0, 2 into shard 0 (slots 0, 1)
  // and 1, 3 into shard 1 (slots 2, 3); step 2's 5 (shard 0) evicts the older of slots 0 and 1 not hit: slot 0
  // (token 0) since 2 is hit; 1 and 3 stay put although shard 1 was loaded at the same time.
  auto p = make_policy("set-assoc:2x2");
  p->reset(4, InitialState::kEmpty);
  SwapInScratch scratch;
  SwapInPlan plan;
  std::vector<int32_t> a = {0, 1, 2, 3};
  p->step({a.data(), 4, 9, 4, nullptr, 1}, {}, plan, scratch);
  CHECK(std::vector<int32_t>(p->slot_token(), p->slot_token() + 4) == std::vector<int32_t>{0, 2, 1, 3});
  std::vector<int32_t> b = {2, 5};
  p->step({b.data(), 2, 10, 4, nullptr, 1}, {}, plan, scratch);
  CHECK(plan.load_slot == std::vector<int32_t>{0});
  CHECK(std::vector<int32_t>(p->slot_token(), p->slot_token() + 4) == std::vector<int32_t>{5, 2, 1, 3});
  // A buffer size the geometry does not divide is refused, naming it.
  auto q = make_policy("set-assoc");
  CHECK_THROWS_WITH_AS(q->reset(100, InitialState::kEmpty), doctest::Contains("H = 100"), Error);
}

TEST_CASE("topk-only misses exactly what the previous step did not hold") {
  const RandomTrace tr = make_trace(99, 16, 60, 40);
  const int32_t H = 32;
  std::vector<int64_t> per_step;
  run_policy("topk-only", tr, H, InitialState::kEmpty, &per_step);
  std::set<int32_t> held;
  for (size_t j = 0; j < tr.steps.size(); ++j) {
    int64_t expect = 0;
    std::set<int32_t> now;
    for (int32_t p : tr.steps[j]) {
      if (p < 0 || p == tr.ns[j] - 1) continue;
      now.insert(p);
      expect += held.count(p) == 0;
    }
    CHECK(per_step[j] == expect);
    held = now;
  }
}

TEST_CASE("policies: sglang-lru is the contract; every policy rejects bad input the same way, state unchanged") {
  const RandomTrace tr = make_trace(5, 8, 12, 20);
  for (const auto& name : all_policies(16)) {
    auto p = make_policy(name);
    p->reset(16, InitialState::kEmpty);
    // The bad step is the first recorded one, so belady's future matches the good trace up to it.
    if (p->needs_future()) p->set_future(future_of(tr, 16));
    SwapInScratch scratch;
    SwapInPlan plan;
    std::vector<int32_t> bad = tr.steps[0];
    bad.resize(std::max<size_t>(bad.size(), 2));
    bad[1] = bad[0] >= 0 ? bad[0] : 3;
    bad[0] = bad[1];
    StepInput in{bad.data(), static_cast<int32_t>(bad.size()), tr.ns[0], 8, nullptr, 1};
    const std::vector<int32_t> before(p->slot_token(), p->slot_token() + 16);
    INFO("policy " << name);
    if (p->needs_future() && bad.size() != tr.steps[0].size()) continue;
    CHECK_THROWS_WITH_AS(p->step(in, {4, 5, 0}, plan, scratch), doctest::Contains("selected twice"), Error);
    CHECK(std::vector<int32_t>(p->slot_token(), p->slot_token() + 16) == before);
    // A miss without a host copy: nothing changes either.
    std::vector<int64_t> host(64, -1);
    StepInput good{tr.steps[0].data(), static_cast<int32_t>(tr.steps[0].size()), tr.ns[0], 8, host.data(), 1};
    CHECK_THROWS_WITH_AS(p->step(good, {4, 5, 0}, plan, scratch), doctest::Contains("has no host copy"), Error);
    CHECK(std::vector<int32_t>(p->slot_token(), p->slot_token() + 16) == before);
  }
}

TEST_CASE("policies: an empty request whose first step has n <= H was preloaded, so it continues as identity") {
  for (const auto& name : all_policies(4)) {
    if (name == "belady") continue;  // needs a future; the switch lives in the shared base class anyway
    auto p = make_policy(name);
    p->reset(4, InitialState::kEmpty);
    SwapInScratch scratch;
    SwapInPlan plan;
    std::vector<int32_t> a = {0, 2};
    p->step({a.data(), 2, 4, 2, nullptr, 1}, {}, plan, scratch);
    CHECK(plan.counters.fast_path);
    std::vector<int32_t> b = {1, 3};
    p->step({b.data(), 2, 5, 2, nullptr, 1}, {}, plan, scratch);  // n = H + 1: tokens 1 and 3 are resident
    INFO("policy " << name);
    CHECK(plan.counters.misses == 0);
    CHECK(plan.counters.hits == 2);
    // Admitted long (n > H): the first top-k misses entirely.
    p->reset(4, InitialState::kEmpty);
    p->step({b.data(), 2, 9, 2, nullptr, 1}, {}, plan, scratch);
    CHECK(plan.counters.misses == 2);
  }
}

TEST_CASE("policies: the direct and the hashed position table give identical plans") {
  // SwapInScratch picks its position table by n / (K + H) (issue 17: memory O(K + H)); both must be the contract.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed * 104729);
    const int32_t K = 2 + static_cast<int32_t>(rng() % 24);
    const int32_t H = K + static_cast<int32_t>(rng() % (2 * K + 1));
    const InitialState initial = rng() % 2 ? InitialState::kIdentity : InitialState::kEmpty;
    const RandomTrace tr = make_trace(seed, K, 60, std::max<int32_t>(1, H - 2));
    for (const auto& name : all_policies(H)) {
      INFO("seed " << seed << " policy " << name << " K " << K << " H " << H);
      auto a = make_policy(name), b = make_policy(name);
      a->reset(H, initial);
      b->reset(H, initial);
      if (a->needs_future()) {
        a->set_future(future_of(tr, H));
        b->set_future(future_of(tr, H));
      }
      SwapInScratch direct(1 << 20), hashed(0);  // always direct / always hashed
      SwapInPlan pa, pb;
      for (size_t j = 0; j < tr.steps.size(); ++j) {
        const auto& T = tr.steps[j];
        StepInput in{T.data(), static_cast<int32_t>(T.size()), tr.ns[j], tr.top_k, nullptr, 100};
        a->step(in, {1, 2, static_cast<int64_t>(j)}, pa, direct);
        b->step(in, {1, 2, static_cast<int64_t>(j)}, pb, hashed);
        REQUIRE(direct.direct());
        REQUIRE_FALSE(hashed.direct());
        REQUIRE(pb.slot_of == pa.slot_of);
        REQUIRE(pb.load_host == pa.load_host);
        REQUIRE(pb.load_slot == pa.load_slot);
        REQUIRE(pb.counters.misses == pa.counters.misses);
        REQUIRE(std::equal(a->slot_token(), a->slot_token() + H, b->slot_token()));
      }
    }
  }
}

TEST_CASE("layer future: positions far sparser than the entries (a few steps at a long context) stay O(entries)") {
  // The same trace shifted up to the longest context: identical next uses; first uses by position through the
  // sorted keys instead of an array indexed by position (which would hold 2^24 entries).
  const int32_t shift = traces::kMaxSeqLen - 400;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const int32_t K = 4 + static_cast<int32_t>(seed % 7), H = 2 * K;
    const RandomTrace tr = make_trace(seed, K, 40, H - 5);
    RandomTrace far = tr;
    for (auto& s : far.steps)
      for (int32_t& p : s)
        if (p >= 0) p += shift;
    for (int32_t& n : far.ns) n += shift;
    const auto near_f = future_of(tr, H);
    const auto far_f = future_of(far, H + shift);  // the same steps take the slow path
    INFO("seed " << seed);
    CHECK(near_f->first_use_keys.empty());  // dense: indexed by position
    REQUIRE_FALSE(far_f->first_use_keys.empty());
    CHECK(far_f->next_use == near_f->next_use);
    CHECK(far_f->first_use.size() <= far_f->next_use.size());
    for (int32_t t = -1; t <= tr.ns.back() + 1; ++t) {
      const int32_t ft = t < 0 ? t : t + shift;
      REQUIRE(far_f->first_use_of(ft) == near_f->first_use_of(t));
    }
    CHECK(far_f->first_use_of(0) == LayerFuture::kNever);
  }
}
