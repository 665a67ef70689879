// @brief plan_v2_session (see hisparse_v2_session.h). One loop iteration is one decode step of the batch: admit the
// waiting requests that fit (first come, first served), give every running request its next token (HiCache evicts
// prefixes when the pool is short; a request is retracted when nothing is left to evict), then record each running
// request's phase and advance it.
#include "cpu_ref/memory/hisparse_v2_session.h"

#include <algorithm>
#include <deque>

#include "core/error.h"
#include "core/hisparse_v2.h"

namespace hisparse::cpu_ref {

int64_t V2SessionCounts::fallbacks() const {
  int64_t f = 0;
  for (size_t i = 1; i < admissions.size(); ++i) f += admissions[i];
  return f;
}

const V2Phase* V2Schedule::phase(int64_t id, int32_t n, int32_t* index) const {
  const auto it = phases.find(id);
  if (it == phases.end()) return nullptr;
  const auto& v = it->second;
  const auto after = std::upper_bound(v.begin(), v.end(), n, [](int32_t x, const V2Phase& p) { return x < p.from_n; });
  if (after == v.begin()) return nullptr;
  if (index) *index = static_cast<int32_t>(after - v.begin() - 1);
  return &*(after - 1);
}

namespace {

enum class State { kWaiting, kRunning, kDone };

struct Req {
  V2RequestSteps in;
  State state = State::kWaiting;
  int32_t n = 0;           // sequence length of its next step
  int64_t left = 0;        // steps left
  int64_t held = 0;        // device tokens it holds (its KV not evicted, plus the temp buffer)
  int64_t order = 0;       // admission order: HiCache evicts the oldest prefixes first (their nodes are the LRU)
  V2Admit outcome = V2Admit::kV2;
  int32_t E = 0;           // tree-owned prefix once admitted as V2, else 0
  int32_t evicted = 0;     // its tail [E - evicted, E) is on the host
  bool fresh = true;       // the next recorded phase starts an empty buffer
  bool retracted = false;  // retracted at least once
};

class SessionRun {
 public:
  SessionRun(const std::vector<V2RequestSteps>& requests, int32_t H, int32_t page, V2Coordinator rules,
             const V2SessionPools& pools)
      : H_(H), rules_(rules), pools_(pools),
        admission_({page, H, pools.host_pool_tokens, pools.indexer_pages < 0 ? (int64_t{1} << 40) : pools.indexer_pages,
                    rules}) {
    for (const auto& r : requests) {
      if (r.first_n < 1 || r.steps < 1)
        throw_error("hisparse-v2 session: request {}: first sequence length {} and {} steps (expected >= 1)", r.id,
                    r.first_n, r.steps);
      Req q;
      q.in = r;
      q.n = r.first_n;
      q.left = r.steps;
      reqs_.push_back(q);
      queue_.push_back(reqs_.size() - 1);
    }
  }

  V2Schedule run() {
    while (!queue_.empty() || running_any()) {
      admit_waiting();
      if (!running_any())
        throw_error("hisparse-v2 session: the device pool of {} tokens cannot hold request {} ({} tokens) even alone",
                    pools_.device_pool_tokens, reqs_[queue_.front()].in.id, reqs_[queue_.front()].n);
      allocate_step();
      advance();
    }
    return std::move(out_);
  }

 private:
  bool running_any() const {
    return std::any_of(reqs_.begin(), reqs_.end(), [](const Req& r) { return r.state == State::kRunning; });
  }
  int64_t free_tokens() const { return pools_.device_pool_tokens - used_; }
  int64_t evictable() const {
    int64_t e = 0;
    for (const Req& r : reqs_)
      if (r.state == State::kRunning) e += r.E - r.evicted;
    return e;
  }
  std::vector<size_t> by_admission() const {
    std::vector<size_t> idx;
    for (size_t i = 0; i < reqs_.size(); ++i)
      if (reqs_[i].state == State::kRunning) idx.push_back(i);
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return reqs_[a].order < reqs_[b].order; });
    return idx;
  }

  /// HiCache frees `need` device tokens: the oldest V2 prefixes first, each from its tail, a whole radix node at a time
  /// (so it may free more than asked). Returns what it freed.
  int64_t evict(int64_t need) {
    int64_t freed = 0;
    for (const size_t i : by_admission()) {
      if (freed >= need) break;
      Req& r = reqs_[i];
      if (r.E - r.evicted <= 0) continue;
      const auto demand = static_cast<int32_t>(std::min<int64_t>(r.E, r.evicted + (need - freed)));
      const int32_t now = r.E - v2_evicted_begin(r.E, pools_.node_tokens, demand, V2Coordinator::kCurrent);
      freed += now - r.evicted;
      r.held -= now - r.evicted;
      r.evicted = now;
    }
    used_ -= freed;
    return freed;
  }

  /// Admits the head of the queue while its prefill fits (after eviction); first come, first served.
  void admit_waiting() {
    while (!queue_.empty()) {
      Req& r = reqs_[queue_.front()];
      const int64_t prefill = r.n - 1;  // the prompt, or after a retraction the prompt and what it generated
      if (free_tokens() + evictable() < prefill) return;
      queue_.pop_front();
      if (free_tokens() < prefill) evict(prefill - free_tokens());
      used_ += prefill;
      r.held = prefill;
      // The temp buffer comes from the pool once the tree is evicted (admit_request: evict_from_tree_cache, alloc).
      const V2AdmitResult a = admission_.admit(r.in.id, prefill, std::max<int64_t>(0, free_tokens() + evictable()));
      ++out_.counts.admissions[static_cast<size_t>(a.outcome)];
      if (r.retracted) ++out_.counts.readmissions;
      r.outcome = a.outcome;
      r.E = a.evicted_end;
      r.evicted = 0;
      if (a.outcome == V2Admit::kV2) {
        if (free_tokens() < H_) evict(H_ - free_tokens());
        used_ += H_;
        r.held += H_;
        if (rules_ == V2Coordinator::kOlder) {  // the former assumption: the whole prefix goes to the host at once
          r.evicted = r.E;
          r.held -= r.E;
          used_ -= r.E;
        }
      }
      r.state = State::kRunning;
      r.order = next_order_++;
      r.fresh = true;
    }
  }

  /// Frees what request i holds; a retracted one goes back to the queue (SGLang re-queues it for a new prefill).
  void release(size_t i, bool retract) {
    Req& r = reqs_[i];
    used_ -= r.held;
    r.held = 0;
    admission_.finish(r.in.id);
    if (!retract) {
      r.state = State::kDone;
      return;
    }
    r.state = State::kWaiting;
    r.retracted = true;
    ++out_.counts.retractions;
    queue_.push_back(i);
  }

  /// The victim of a retraction: the fewest generated tokens, then the longest prompt (ScheduleBatch.retract_decode
  /// sorts by (len(output_ids), -len(origin_input_ids)) descending and pops from the end).
  size_t retraction_victim() const {
    const auto idx = by_admission();
    return *std::min_element(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const Req &x = reqs_[a], &y = reqs_[b];
      const int32_t gx = x.n - x.in.first_n, gy = y.n - y.in.first_n;
      return gx != gy ? gx < gy : x.in.first_n > y.in.first_n;
    });
  }

  /// Every running request's next token (check_decode_mem: evict, else retract until the rest fit).
  void allocate_step() {
    for (;;) {
      const auto idx = by_admission();
      const auto need = static_cast<int64_t>(idx.size());
      if (free_tokens() < need) evict(need - free_tokens());
      if (free_tokens() >= need || idx.size() <= 1) break;
      release(retraction_victim(), true);
    }
    const auto idx = by_admission();
    if (free_tokens() < static_cast<int64_t>(idx.size()))
      throw_error("hisparse-v2 session: the device pool of {} tokens cannot hold request {} ({} tokens) even alone",
                  pools_.device_pool_tokens, reqs_[idx.front()].in.id, reqs_[idx.front()].n);
    for (const size_t i : idx) {
      used_ += 1;
      reqs_[i].held += 1;
    }
  }

  void record_phase(Req& r) {
    auto& v = out_.phases[r.in.id];
    V2Phase p;
    p.from_n = r.n;
    p.outcome = r.outcome;
    p.evicted_end = r.outcome == V2Admit::kV2 ? r.E : 0;
    p.evicted_begin = p.evicted_end - (r.outcome == V2Admit::kV2 ? r.evicted : 0);
    p.fresh_buffer = r.fresh;
    const bool same = !v.empty() && !r.fresh && v.back().outcome == p.outcome &&
                      v.back().evicted_begin == p.evicted_begin && v.back().evicted_end == p.evicted_end;
    if (!same) v.push_back(p);
    r.fresh = false;
  }

  void advance() {
    for (const size_t i : by_admission()) {
      Req& r = reqs_[i];
      record_phase(r);
      ++r.n;
      if (--r.left > 0) continue;
      if (r.outcome == V2Admit::kV2) {
        out_.counts.prefix_tokens += r.E;
        out_.counts.evicted_tokens += r.evicted;
        if (r.evicted > 0 && r.evicted < r.E) ++out_.counts.v2_requests_partly_evicted;
      }
      release(i, false);
    }
  }

  int32_t H_;
  V2Coordinator rules_;
  V2SessionPools pools_;
  HiSparseV2Admission admission_;
  std::vector<Req> reqs_;
  std::deque<size_t> queue_;
  int64_t used_ = 0;
  int64_t next_order_ = 0;
  V2Schedule out_;
};

}  // namespace

V2Schedule plan_v2_session(const std::vector<V2RequestSteps>& requests, int32_t H, int32_t page, V2Coordinator rules,
                           const V2SessionPools& pools) {
  if (pools.device_pool_tokens < 1 || H < 1 || page < 1)
    throw_error("hisparse-v2 session: device pool {} tokens, H {}, page {} (expected each >= 1)",
                pools.device_pool_tokens, H, page);
  return SessionRun(requests, H, page, rules, pools).run();
}

}  // namespace hisparse::cpu_ref
