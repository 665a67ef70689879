// @brief Arrivals (open-loop trace or closed-loop clients), admission by the rank's cpu_ref pools (and, under v2, its
// one-home ledger), host-pool allocation as the KV lands (and its failure: abort, retry or reject), completion.
#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/serving/engine.h"
#include "sim/serving/prefix/prefix_pages.h"

namespace hisparse::sim::serving {

int64_t Engine::issue(SimTime at, int32_t client) {
  const int64_t i = static_cast<int64_t>(specs_.size());
  RequestSpec s = w_.requests[static_cast<size_t>(next_closed_loop_spec(client, &at))];
  s.id = i;
  s.arrival = at;
  specs_.push_back(s);
  RequestOutcome o;
  o.id = i; o.input_tokens = s.input_tokens; o.output_tokens = s.output_tokens; o.arrival = at;
  outcomes_.push_back(o);
  rt_.emplace_back();
  client_of_.push_back(client);
  --to_send_;
  ++in_flight_;  // sent: a client is busy from here (think time 0 → no gap between two requests of a client)
  sim_.schedule(at, handler_, kArrival, i);
  return i;
}

void Engine::arrive(int64_t i) {
  if (opt_.clients.concurrency == 0 && static_cast<size_t>(i + 1) < specs_.size())
    sim_.schedule(specs_[static_cast<size_t>(i + 1)].arrival, handler_, kArrival, i + 1);
  if (turn_waits(i)) return;  // a later turn of a session whose previous turn has not ended + think time
  enter(i);
}

void Engine::enter(int64_t i) {
  ++result_.arrivals;
  if (opt_.clients.concurrency == 0) ++in_flight_;
  outcomes_[static_cast<size_t>(i)].arrival = sim_.now();  // a held turn is sent when released
  if (prefix_cache_) {
    if (prefix_keys_.size() < specs_.size()) prefix_keys_.resize(specs_.size());
    prefix_keys_[static_cast<size_t>(i)] = prompt_pages(spec(i), w_.block_tokens, page_);
  }
  waiting_.push_back(i);
  try_admit();
}

PoolNeed Engine::needs(int64_t i) const {
  const auto& r = spec(i);
  const int64_t total = static_cast<int64_t>(r.input_tokens) + r.output_tokens;
  PoolNeed n;
  // The prompt (with a retracted request's decoded tokens) and the output admission reserves: the whole request
  // unless the deployment retracts (sim/serving/retraction.cpp).
  n.logical = paged(prompt_tokens(i) + reserved_output(i));
  // vLLM schedules a waiting request with the blocks of its first prefill chunk only (the token budget) and gives the
  // rest chunk by chunk (grow_prefill, sim/serving/retraction.cpp).
  if (retraction_ == Retraction::kVllm)
    n.logical = paged(std::min<int64_t>(prompt_tokens(i), std::max<int64_t>(1, opt_.cost.prefill_chunk_tokens)));
  n.dsv4 = dsv4_request_need(sc_, total);  // DeepSeek-V4's window, C128, indexer and state pools (0 otherwise)
  if (!hisparse_) return n;
  // The device buffer (docs/capacity.md): the whole request while it fits H, else H + one page (the newest-token
  // slot). Colocated prefill first extends device rows for every prompt token; staging then shrinks to the buffer.
  n.device = total <= H_ ? paged(total) : H_ + page_;
  if (prefill_mode_ == PrefillMode::kColocated) n.device = std::max(n.device, paged(prompt_tokens(i)));
  n.host = paged(total);
  return n;
}

void Engine::try_admit() {
  if (admitting_) return;  // admission can finish or abort requests, which admit again: the outer loop goes on
  admitting_ = true;
  const int32_t max_run = sc_.deployment.max_running_requests;
  const Rank& any = ranks_.front();  // v2: every rank's ledger has the same sizes
  while (!waiting_.empty()) {
    const int64_t i = waiting_.front();
    const auto& r = spec(i);
    // The tokens to prefill (a retracted request's decoded ones included) and the output still to come.
    const auto& oi = outcomes_[static_cast<size_t>(i)];
    const AdmissionAsk ask = admission_->ask(needs(i), prompt_tokens(i), r.output_tokens - oi.decoded, any, page_);
    // A request that retracts still needs its whole length alone on a rank (SGLang asserts the last one fits).
    const bool too_long = retraction_ != Retraction::kNone &&
                          paged(static_cast<int64_t>(r.input_tokens) + r.output_tokens) > pool_sizes_.logical;
    // DeepSeek-V4: a request that no empty rank's window, C128, indexer or state pool could hold.
    const bool v4_never = pool_sizes_.dsv4.any() && Dsv4PoolLedger(pool_sizes_.dsv4).never_fits(ask.need.dsv4) >= 0;
    if (too_long || v4_never || admission_->never_fits(ask, pool_sizes_, any)) {
      outcomes_[static_cast<size_t>(i)].rejected = true;
      ++result_.rejected;
      waiting_.pop_front();
      request_done(i);
      continue;
    }
    int32_t best = -1;
    for (size_t g = 0; g < ranks_.size(); ++g) {
      const Rank& rank = ranks_[g];
      if (max_run > 0 && rank.reserved() >= max_run) continue;
      // Dynamic residency: resident KV beyond the buffers is reclaimable (demoted on demand).
      PoolNeed room = ask.check;
      if (dynamic_) room.device = std::max<int64_t>(0, ask.check.device - reclaimable(rank));
      prefix_room(rank, i, room);  // a cached prefix is not taken again; unlocked cached pages can be evicted
      if (!admission_->fits(rank, ask, room)) continue;
      if (best < 0 || rank.reserved() < ranks_[static_cast<size_t>(best)].reserved()) best = static_cast<int32_t>(g);
    }
    if (best < 0) break;  // head-of-line: wait for memory to free up
    waiting_.pop_front();
    Rank& rank = ranks_[static_cast<size_t>(best)];
    if (dynamic_) make_device_room(rank, ask.need.device);
    AdmissionAsk take = ask;
    const RankPrefixCache::Hold hold = acquire_prefix(rank, i, take.need);
    const AdmissionTaken taken = admission_->take(rank, i, take, r.output_tokens);
    if (!taken.ok)
      throw_error("serving engine: rank {} reported room for request {} but its pools refused the pages", best, i);
    if (taken.v2_outcome >= 0) ++result_.v2_admissions[static_cast<size_t>(taken.v2_outcome)];
    admitted(i, best, hold);
  }
  admitting_ = false;
}

void Engine::admitted(int64_t i, int32_t rank, const RankPrefixCache::Hold& hold) {
  Rank& g = ranks_[static_cast<size_t>(rank)];
  g.admit();
  rt_[static_cast<size_t>(i)].admit(rank, dynamic_);
  rt_[static_cast<size_t>(i)].hold_prefix(hold);  // its matched prefix: locked, not prefilled again
  auto& o = outcomes_[static_cast<size_t>(i)];
  o.gpu = rank;
  o.cached_tokens = static_cast<int32_t>(hold.tokens);
  if (o.admitted < 0) o.admitted = sim_.now();  // a retracted request keeps its first admission
  ++result_.admitted;
  const auto& r = spec(i);
  switch (prefill_mode_) {
    case PrefillMode::kColocated: {
      g.queue_prefill(i);
      Instance& inst = instances_[static_cast<size_t>(g.instance())];
      if (!inst.stepping) start_step(g.instance());
      return;
    }
    case PrefillMode::kPdExternal:
    case PrefillMode::kPd: {
      // The decode side pre-allocates the RDMA target: logical indices and, in HiSparse, host pages of the prompt.
      if (hisparse_ && !host_alloc(i, r.input_tokens, "_pre_alloc")) return;
      if (prefill_mode_ == PrefillMode::kPdExternal) {
        // Prefill ran on nodes outside the scenario: its KV leaves them at the request's arrival (TTFT not modelled).
        if (r.output_tokens <= 1) { complete(i); return; }
        start_transfer(i);
        return;
      }
      // Shortest prefill queue (the running request counts), lowest index on ties.
      auto load = [](const PrefillInstance& p) { return p.queue.size() + (p.current >= 0 ? 1 : 0); };
      size_t p = 0;
      for (size_t k = 1; k < prefill_.size(); ++k)
        if (load(prefill_[k]) < load(prefill_[p])) p = k;
      prefill_[p].queue.push_back(i);
      if (prefill_[p].current < 0) start_prefill(static_cast<int32_t>(p));
      return;
    }
  }
}

bool Engine::host_alloc(int64_t i, int64_t tokens, const char* where) {
  Rank& g = rank_of(i);
  const int64_t short_pages = evict_for_host(g, i, tokens);
  if (short_pages == 0) return true;
  abort_request(i, short_pages, where);
  return false;
}

void Engine::abort_request(int64_t i, int64_t pages, const char* where) {
  Rank& g = rank_of(i);
  auto& o = outcomes_[static_cast<size_t>(i)];
  if (result_.first_abort.empty())
    result_.first_abort = fmt::format("HiSparse host mem pool alloc failed for {} pages (request {}, {} tokens, in {}, "
                                      "t = {:.6f} s)", pages, i, spec(i).input_tokens, where, ns_to_seconds(sim_.now()));
  ++result_.aborts;
  --result_.admitted;
  // Alone on its rank and still short: the host pool can never hold it.
  const bool hopeless = g.pools().owners() == 1;
  g.pools().release(i);
  release_prefix(g, i, /*insert=*/false);
  admission_->release(g, i);
  g.leave(i);
  result_.wasted_decode_tokens += o.decoded;
  o.decoded = 0;
  o.selected = o.misses = 0;
  o.admitted = o.prefill_start = o.first_token = o.ready = -1;
  o.gpu = -1;
  rt_[static_cast<size_t>(i)].reset();
  ++o.retries;
  if (hopeless || o.retries > opt_.max_retries) {
    o.rejected = true;
    ++result_.rejected;
    request_done(i);
    return;
  }
  retry_.push_back(i);  // retried once a request finishes and frees pages (complete())
}

void Engine::complete(int64_t i) {
  auto& o = outcomes_[static_cast<size_t>(i)];
  o.finish = sim_.now();
  ++result_.finished;
  Rank& g = rank_of(i);
  g.pools().release(i);
  admission_->release(g, i);
  release_prefix(g, i, /*insert=*/true);  // its prompt's pages stay as the cache's (cache_finished_req)
  g.leave(i);
  // Aborted requests go back to the head of the queue, in abort order, now that pages were freed.
  waiting_.insert(waiting_.begin(), retry_.begin(), retry_.end());
  retry_.clear();
  request_done(i);
}

void Engine::request_done(int64_t i) {
  --in_flight_;
  turn_done(i);
  if (opt_.on_request_done) opt_.on_request_done(result_.finished + result_.rejected);
  if (opt_.clients.concurrency > 0 && to_send_ > 0)
    issue(sim_.now() + opt_.clients.think_time, client_of_[static_cast<size_t>(i)]);
}

}  // namespace hisparse::sim::serving
