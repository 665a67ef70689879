// @brief Decode retraction (SGLang) and recompute preemption (vLLM) in the serving engine. A deployment that reserves
// less than each request's whole output at admission (`decode_reserve_ratio` < 1, or `engine: vllm`, which reserves
// none) grows each running request's KV a page at a time as it decodes; when the next step's pages are more than the
// rank's pool has free, requests leave the running batch, free every page they hold, and wait to be admitted again;
// their prompt and the tokens they had decoded are prefilled again (recompute), then they decode the rest.
//
// SGLang (sgl-project/sglang fd3907ee, python/sglang/srt/managers/schedule_batch.py, ScheduleBatch.check_decode_mem /
// retract_decode / release_req; scheduler.py update_running_batch): before a decode step the batch checks the pages
// its requests' next tokens need; if the pool (after evicting the radix cache) cannot give them, it sorts the
// requests by (tokens decoded, −prompt tokens) descending and pops from the end (the fewest decoded tokens first;
// among equals the longest prompt) until the remaining requests' next pages fit, freeing each one's KV without
// caching it; the retracted requests keep their output and go back to the waiting queue
// (_extend_requests_to_queue), where they are prefilled again with prompt + output. Lines are not cited: the stored
// corpus returns that file's text without line numbers.
// vLLM (vllm-project/vllm b4622cf9, vllm/v1/core/sched/scheduler.py, Scheduler.schedule): running requests are given
// their new slots in order; when allocate_slots fails the FCFS policy preempts the last running request
// (self.running.pop(), the most recently scheduled), frees its blocks, resets its computed tokens to 0 (recompute)
// and puts it back at the head of the waiting queue (_preempt_request), until the request being scheduled fits; a
// request that finds itself the last one preempts itself. A waiting request is scheduled with the slots of the
// tokens it computes in that step only (its prompt capped by the step's token budget, chunked prefill), and a
// prefilling request asks for the next chunk's slots each step (grow_prefill): so vLLM admits more long prompts
// than its blocks hold, and under pressure the newest, partly prefilled, is preempted and prefilled again.
//
// Modelled: full-KV mode with colocated prefill (the GPU that decodes recomputes the prefix); vLLM's token budget is
// the cost file's prefill_chunk_tokens, one prefilling request per rank and pass as the engine runs chunks, the
// requests still waiting for their first chunk newer than every decoding one; its prefix cache (freed blocks that a
// preempted request may find again) is not modelled. SGLang's waiting-queue
// order for retracted requests is taken as the back of the queue (assumed: its default fcfs policy does not reorder
// the queue without priorities), vLLM's the head. SGLang's new_token_ratio, which it raises after a retraction and
// lets decay, is the deployment's fixed `decode_reserve_ratio` here (assumed).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

int64_t Engine::prompt_tokens(int64_t i) const {
  // A retracted request is prefilled again with the tokens it had decoded (its output so far is kept).
  return static_cast<int64_t>(spec(i).input_tokens) + outcomes_[static_cast<size_t>(i)].decoded;
}

int64_t Engine::reserved_output(int64_t i) const {
  const auto& o = outcomes_[static_cast<size_t>(i)];
  const int64_t left = std::max<int64_t>(0, static_cast<int64_t>(o.output_tokens) - o.decoded);
  if (retraction_ == Retraction::kNone) return left;
  if (retraction_ == Retraction::kVllm) return 0;  // vLLM allocates decode slots as they are needed
  return static_cast<int64_t>(std::ceil(sc_.deployment.decode_reserve_ratio * static_cast<double>(left)));
}

int64_t Engine::growth_tokens(const Rank& g, int64_t i) const {
  // The step writes the request's token n − 1: its KV must cover n tokens (whole pages), the cached prefix's included.
  const RequestState& rt = rt_[static_cast<size_t>(i)];
  return std::max<int64_t>(0, paged(rt.n()) - rt.cached() - g.pools().held(i, 0));
}

void Engine::grow_or_retract(Rank& g) {
  std::vector<int64_t> keep = g.running();
  if (retraction_ == Retraction::kSglang)
    std::stable_sort(keep.begin(), keep.end(), [&](int64_t a, int64_t b) {
      const auto& oa = outcomes_[static_cast<size_t>(a)];
      const auto& ob = outcomes_[static_cast<size_t>(b)];
      if (oa.decoded != ob.decoded) return oa.decoded > ob.decoded;
      return spec(a).input_tokens < spec(b).input_tokens;
    });
  auto need = [&] {
    int64_t t = 0;
    for (int64_t i : keep) t += growth_tokens(g, i);
    return t;
  };
  RankPrefixCache* cache = g.prefix_cache();
  while (need() > g.pools().free_tokens(0)) {
    // vLLM pops the most recently scheduled request: an admitted one still prefilling is newer than any decoding one.
    if (retraction_ == Retraction::kVllm && !g.prefill_queue().empty()) {
      retract(g, g.prefill_queue().back());
      continue;
    }
    // SGLang evicts the radix cache before it retracts (check_decode_mem).
    if (cache && cache->evictable_pages() > 0) {
      cache->make_room(need(), sim_.now());
      continue;
    }
    if (keep.size() == 1)
      throw_error("serving engine: rank {}: request {} alone needs {} more tokens, {} free (admission checks the whole "
                  "request fits an empty pool)", g.local(), keep.front(), need(), g.pools().free_tokens(0));
    const int64_t victim = keep.back();
    keep.pop_back();
    retract(g, victim);
  }
  for (int64_t i : keep)
    if (g.pools().grow_logical(i, rt_[static_cast<size_t>(i)].n() - rt_[static_cast<size_t>(i)].cached()) != 0)
      throw_error("serving engine: request {} could not take the pages counted free", i);
}

bool Engine::grow_prefill(Rank& g, int64_t i, int64_t upto) {
  // vLLM: the chunk's blocks, preempting the most recently scheduled request until they can be had; a request still
  // waiting for its first chunk behind `i` is newer than it, else `i` itself is the newest (every decoding request
  // was scheduled before it) and preempts itself.
  while (paged(upto) - g.pools().held(i, 0) > g.pools().free_tokens(0)) {
    if (g.prefill_queue().back() == i) {
      retract(g, i);
      return false;
    }
    retract(g, g.prefill_queue().back());
  }
  if (g.pools().grow_logical(i, upto) != 0)
    throw_error("serving engine: request {} could not take the prefill pages counted free", i);
  return true;
}

void Engine::retract(Rank& g, int64_t i) {
  auto& o = outcomes_[static_cast<size_t>(i)];
  ++o.retractions;
  ++result_.retractions;
  // The KV it drops and will compute again: prompt + decoded tokens, or, still prefilling, the chunks it had.
  const auto& queue = g.prefill_queue();
  const bool prefilling = std::find(queue.begin(), queue.end(), i) != queue.end();
  const int64_t dropped = prefilling ? rt_[static_cast<size_t>(i)].prefilled() : prompt_tokens(i);
  result_.retracted_tokens += dropped;
  int64_t& extent = computed_extent_[i];
  extent = std::max(extent, dropped);
  --result_.admitted;
  g.pools().release(i);
  admission_->release(g, i);  // v2 current: retract_req calls request_finished (host, indexer, temp buffer back)
  release_prefix(g, i, /*insert=*/false);  // retracted without caching its KV (release_req)
  g.leave(i);
  rt_[static_cast<size_t>(i)].reset();
  if (retraction_ == Retraction::kVllm) waiting_.push_front(i);
  else waiting_.push_back(i);
}

}  // namespace hisparse::sim::serving
