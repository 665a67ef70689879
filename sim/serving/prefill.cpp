// @brief Prefill: on prefill instances with the KV sent by RDMA (PD), or chunked on the decode GPUs with the
// interference on the decode step and SGLang's staging backup (colocated), then the request joins decode.
#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/cost/step/dynamic_residency.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

namespace {
/// Prefill time of prompt tokens [done, done + take): the prompt's prefill up to there less its prefill before (the
/// chunk's share, attention over the earlier tokens included). After a cached prefix (`cached`) the difference alone
/// can miss the pass's fixed part (a pass reads the weights once, and the closed form counts weight reads per whole
/// chunk from token 0), so the chunk costs at least a pass of its own tokens.
SimTime prefill_span(const DecodeCostModel& c, int64_t done, int64_t take, bool cached) {
  const SimTime share = c.prefill_time(done + take) - c.prefill_time(done);
  return cached ? std::max(share, c.prefill_time(take)) : share;
}
}  // namespace

// ---- PD: prefill instances, RDMA into the decode rank ----

void Engine::start_prefill(int32_t p) {
  PrefillInstance& pi = prefill_[static_cast<size_t>(p)];
  if (pi.queue.empty()) return;
  const int64_t i = pi.queue.front();
  pi.queue.pop_front();
  pi.current = i;
  outcomes_[static_cast<size_t>(i)].prefill_start = sim_.now();
  // A prefix cached on the decode rank is not computed again: the rest's share of the prompt's prefill, attention over
  // the cached prefix included (as a colocated chunk's).
  const int64_t cached = rt_[static_cast<size_t>(i)].cached();
  const SimTime t = prefill_span(cost_, cached, spec(i).input_tokens - cached, cached > 0);
  sim_.schedule(sim_.now() + t, handler_, kPrefillDone, p);
}

void Engine::prefill_done(int32_t p) {
  PrefillInstance& pi = prefill_[static_cast<size_t>(p)];
  const int64_t i = pi.current;
  pi.current = -1;
  auto& o = outcomes_[static_cast<size_t>(i)];
  o.first_token = sim_.now();
  if (trace_) trace_->span(fmt::format("prefill r{} ({} tok)", i, o.input_tokens), "prefill", 100 + p, 0, o.prefill_start, sim_.now());
  start_prefill(p);
  if (spec(i).output_tokens <= 1) { complete(i); try_admit(); return; }
  start_transfer(i);
}

void Engine::start_transfer(int64_t i) {
  const auto& r = spec(i);
  const Rank& g = rank_of(i);
  // Every GPU of the rank receives the whole KV (attention TP replicates the latent), less a prefix it has cached.
  const int64_t sent = static_cast<int64_t>(r.input_tokens) - rt_[static_cast<size_t>(i)].cached();
  const double bytes = static_cast<double>(sent) * (kv_bytes_per_token_ + idx_bytes_per_token_);
  // One message per page per layer (how SGLang's transfer engines slice KV); their overhead is serial.
  const int64_t messages = (sent + page_ - 1) / page_ * kv_layers_;
  rt_[static_cast<size_t>(i)].start_flows(gpr_);
  // HiSparse lands in the host pool (host DRAM); full KV, and a v2 request admit_request ran as standard, in HBM
  // (GPUDirect RDMA).
  const bool to_host = hisparse_ && !admission_->all_resident(g, i);
  start_rank_flows(g, bytes, messages * sc_.hardware.nic.per_message_ns, 0, false, false, to_host, true, cookie(kRdma, i));
}

void Engine::rdma_done(int64_t i) {
  const auto& r = spec(i);
  cache_prompt(rank_of(i), i);  // its prompt's KV has arrived (PD + full KV: the decode rank's cache)
  RequestState& rt = rt_[static_cast<size_t>(i)];
  // HiSparse: the KV is in the host pool, the device buffer starts empty when the request is longer than it.
  const bool to_host = hisparse_ && !admission_->all_resident(rank_of(i), i);  // as start_transfer landed it
  rt.decode_from(r.input_tokens, to_host && r.input_tokens + 1 > H_);
  if (!to_host) { make_ready(i); return; }
  // The indexer keys of every token live on the GPU; a short request (n <= H) also preloads its latent rows.
  double bytes = static_cast<double>(r.input_tokens) * idx_bytes_per_token_;
  if (rt.n() <= H_) bytes += static_cast<double>(r.input_tokens) * offload_bytes_per_token_;
  rt.start_flows(gpr_);
  start_rank_flows(rank_of(i), bytes, sc_.hardware.pcie.latency_ns, 0, true, false, true, false, cookie(kAdmitH2d, i));
}

void Engine::make_ready(int64_t i) {
  auto& o = outcomes_[static_cast<size_t>(i)];
  o.ready = sim_.now();
  Rank& g = rank_of(i);
  g.join(i);
  RequestState& rt = rt_[static_cast<size_t>(i)];
  rt.join(spec(i).input_tokens);
  // Dynamic residency: staging done, the request decodes with its full KV on the GPU (_finish_hisparse_staging).
  // (A v2 request run as standard is no HiSparse request: nothing to demote.)
  if (dynamic_ && !admission_->all_resident(g, i)) { rt.resident(); o.residency = Residency::kResidentBacked; }
  Instance& inst = instances_[static_cast<size_t>(g.instance())];
  if (!inst.stepping) start_step(g.instance());
}

// ---- colocated: chunked prefill on the decode ranks ----

SimTime Engine::plan_prefill(Instance& inst) {
  // SGLang runs a prefill batch as its own forward pass before the decode batch; under DP attention every rank takes
  // part in it (the MoE layers are shared), so the pass lasts as long as the slowest rank's chunk. One request's chunk
  // per rank and pass, at most prefill_chunk_tokens (the cost file's chunked_prefill_size).
  SimTime pass = 0;
  inst.prefill_tokens = 0;
  const int64_t chunk = std::max(1, opt_.cost.prefill_chunk_tokens);
  for (int32_t k = 0; k < inst.ranks; ++k) {
    Rank& g = ranks_[static_cast<size_t>(inst.first_rank + k)];
    g.step.chunks.clear();
    if (g.prefill_queue().empty()) continue;
    const int64_t i = g.prefill_queue().front();
    const RequestState& rt = rt_[static_cast<size_t>(i)];
    const int64_t take = std::min<int64_t>(prompt_tokens(i) - rt.prefilled(), chunk);
    if (retraction_ == Retraction::kVllm && !grow_prefill(g, i, rt.prefilled() + take)) continue;  // it preempted itself
    g.step.chunks.emplace_back(i, take);
    auto& o = outcomes_[static_cast<size_t>(i)];
    if (o.prefill_start < 0) o.prefill_start = sim_.now();
    // The chunk's share of the prompt's prefill: the attention over the prefix already in the cache is part of it.
    pass = std::max(pass, prefill_span(prefill_cost_, rt.prefilled(), take, rt.cached() > 0));
    inst.prefill_tokens += take;
  }
  return pass;
}

void Engine::prefill_chunks_done(Instance& inst) {
  for (int32_t k = 0; k < inst.ranks; ++k) {
    Rank& g = ranks_[static_cast<size_t>(inst.first_rank + k)];
    const auto chunks = g.step.chunks;
    g.step.chunks.clear();
    for (const auto& [i, take] : chunks) {
      RequestState& rt = rt_[static_cast<size_t>(i)];
      auto& o = outcomes_[static_cast<size_t>(i)];
      if (auto e = computed_extent_.find(i); e != computed_extent_.end() && e->second > rt.prefilled()) {
        // The part of a retracted request's prefix it had computed before, computed again.
        const int64_t again = std::min(take, e->second - rt.prefilled());
        result_.recomputed_tokens += again;
        result_.recompute_ns += prefill_span(prefill_cost_, rt.prefilled(), again, rt.cached() > 0);
      }
      rt.prefill_chunk(take);
      result_.prefill_tokens += take;
      const auto& r = spec(i);
      const int64_t prompt = prompt_tokens(i);
      if (rt.prefilled() < prompt) continue;
      g.prefill_finished();
      if (o.first_token < 0) o.first_token = sim_.now();  // a retracted request keeps its first token
      if (trace_) trace_->span(fmt::format("prefill r{} ({} tok)", i, r.input_tokens), "prefill", 1 + g.instance(), g.local() * 10 + 3,
                               o.prefill_start, sim_.now());
      if (r.output_tokens <= 1) { complete(i); continue; }
      // Full KV, or a v2 request admit_request ran as standard: its KV stays in device rows, nothing is staged.
      if (!hisparse_ || admission_->all_resident(g, i)) {
        // The cache of a HiSparse rank lives in its host pool; a v2 standard request's rows are on the device, so
        // its prompt is not offered to that cache (modelled: SGLang's V2 standard path is not priced for caching).
        if (!hisparse_) cache_prompt(g, i);
        rt.decode_from(static_cast<int32_t>(prompt), false);
        make_ready(i);
        continue;
      }
      // Staging (admit_request_into_staging): host pages for every prompt token, then the prompt's latent is backed
      // up device → host before the request enters HiSparse decode, in one batched copy of every layer (transfer
      // granularity: backup_from_device_all_layer).
      if (!host_alloc(i, prompt, "admit_request_into_staging")) continue;
      rt.start_flows(gpr_);
      // The prompt's latent is backed up to the host, less the prefix its admission found there.
      const TransferCost off = step_.prefill_offload(prompt - o.cached_tokens);
      cache_prompt(g, i);
      result_.staging_copies += off.transfers;  // one batched call, or one per page per layer (page_first_direct)
      start_rank_flows(g, off.bytes, off.transfers * sc_.hardware.pcie.latency_ns, 0, false, true, true, false,
                       cookie(kStaging, i));
    }
  }
}

void Engine::staging_done(int64_t i) {
  const auto& r = spec(i);
  const int64_t total = static_cast<int64_t>(r.input_tokens) + r.output_tokens;
  // The prompt's device rows beyond the buffer go back to the device pool (a v2 standard request keeps them all;
  // dynamic residency keeps them: the request is resident).
  Rank& g = rank_of(i);
  V2PrefixEviction* kept = g.v2_prefixes();
  if (kept && g.v2()->admitted(i)) {
    keep_v2_prefix(g, i, swap_device_tokens(total, H_, page_));
  } else if (!dynamic_ && !admission_->keeps_device_rows(g, i)) {
    g.pools().shrink_device(i, swap_device_tokens(total, H_, page_));
  }
  // The buffer keeps the prompt's rows it had on the device: no empty start, but after a retraction (v2 current:
  // admit_request clears the buffer of the re-admitted request, which decodes on from its recomputed prefix).
  const bool retracted = outcomes_[static_cast<size_t>(i)].retractions > 0;
  rt_[static_cast<size_t>(i)].decode_from(static_cast<int32_t>(prompt_tokens(i)), retracted);
  make_ready(i);
}

void Engine::keep_v2_prefix(Rank& g, int64_t i, int64_t buffer) {
  // v2 current: the request keeps its tree-owned prefix [0, E) in device rows beside its buffer (the prompt's rows
  // the prefill wrote; the unaligned tail lives in the buffer's pages). When the pool cannot hold prefix and buffer,
  // HiCache evicts staged prefixes, the oldest first (this one, just staged, last), leaf first in whole nodes.
  V2PrefixEviction& kept = *g.v2_prefixes();
  kept.keep(i, static_cast<int32_t>(g.v2()->tree_len(i)), buffer);
  const int64_t grow = kept.device_rows(i) - g.pools().held(i, 1);
  if (grow > g.pools().free_tokens(1)) kept.evict(grow - g.pools().free_tokens(1), g.pools());
  const int64_t rows = kept.device_rows(i);
  if (rows < g.pools().held(i, 1)) {
    g.pools().shrink_device(i, rows);
  } else if (g.pools().grow_pool(1, i, rows) != 0) {
    throw_error("serving engine: request {} could not keep its V2 prefix rows after eviction", i);
  }
}

}  // namespace hisparse::sim::serving
