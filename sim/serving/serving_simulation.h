// @brief ServingSimulation: requests arrive (open-loop trace or closed-loop clients), are admitted by the
// cpu_ref/memory pools of a dp rank, prefill (on prefill instances with an RDMA transfer, or chunked on the decode
// GPUs with SGLang's staging backup), and decode step by step on the instance's ranks in lockstep (expert
// all-to-all), in full-KV or HiSparse mode — one engine, one switch.
//
// Ranks come from the deployment (sim/serving/ranks.h, the same rank_layout() `plan` uses): attention data
// parallelism gives `dp_attention` ranks per instance, each with its own batch and pools; attention tensor
// parallelism gives one rank of `tp / dp_attention` GPUs that all hold the whole latent and split the heads, with an
// all-reduce per layer.
//
// Granularity (chosen for speed, see docs/cost_model.md): a decode step is a handful of events per rank, not per
// layer. Per rank: [indexer + top-k + hit detection of all layers] → [host→device copy of all layers' misses, one
// flow per GPU of the rank on the shared links] → [attention of all layers] → barrier over the instance's ranks →
// [MoE, all-to-all, LM head of all layers] → step end. Exact for one GPU on an uncontended link in `none` mode; under
// contention the copies of one step are one flow at the fair rate instead of 61 bursts, and the per-layer barrier of
// the all-to-all is taken once per step (the slowest rank's step sum, not the sum of per-layer maxima).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/hisparse_v2.h"
#include "sim/engine/chrome_trace.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/step/kv_mode.h"
#include "sim/miss/miss_model.h"
#include "sim/engine/sim_time.h"
#include "sim/cost/step/step_cost.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {


/// A request's residency under dynamic residency (SGLang's hisparse_dynamic.py): `staging` from admission until its
/// prompt is backed up and it decodes, `resident_backed` (full KV on the GPU, the host backup one token a step), `swap`
/// (demoted to the device buffer when the device pool ran short; never promoted back), `none` before and after.
enum class Residency { kNone, kStaging, kResidentBacked, kSwap };
const char* to_string(Residency residency);

/// What admission checks before it takes a request (sim/serving/pools.h).
enum class AdmissionCheck {
  kPools,        // every pool the request will use: logical, device and its host pages (the fix)
  kLogicalOnly,  // the logical and device allocators only, as SGLang's scheduler did; host pages are taken as the
                 // KV lands (prefill / RDMA target, then one page per page_size decoded tokens) and can fail:
                 // "HiSparse host mem pool alloc failed", the request is aborted and retried
  kV2,           // SGLang's V2 admission, by ServingOptions::v2_coordinator: current (default) = the V2
                 // coordinator's admit_request through cpu_ref's HiSparseV2Admission (the short-prefix gate, the
                 // host, indexer and temp-buffer fallbacks to standard, retraction and re-admission); older = the
                 // HiCache-backing ledger (sim/serving/admission_ledger.h): one home per token, device or host,
                 // reservable = host + usable device − claimed; prompts shorter than H + page run as standard
                 // requests; homes are taken as the KV lands, host first, then device
};
const char* to_string(AdmissionCheck check);
AdmissionCheck parse_admission_check(const std::string& text, const std::string& where);

/// Closed-loop clients (sglang bench_serving --max-concurrency style): `concurrency` clients each send a request, wait
/// for its last token (or its rejection), think, and send the next. The requests' lengths are the workload's, in its
/// order, cycled; their arrival times are the workload's no more. A workload of sessions is run session by session:
/// a client sends one session's turns in order, each its think time after the previous turn ended, then the next
/// session (sim/serving/sessions.cpp). 0 clients = open loop (the workload's arrivals).
struct ClientSpec {
  int32_t concurrency = 0;
  SimTime think_time = 0;
  int64_t requests = 0;      // requests sent in all; 0 = as many as the workload has
};

struct ServingOptions {
  KvMode mode = KvMode::kHiSparse;
  CostParams cost;
  const MissModel* miss_model = nullptr;  // HiSparse mode; null = statistical defaults from the scenario
  SimTime trace_begin = 0, trace_end = 0;  // Chrome-trace window; empty = none
  bool record_steps = true;                // keep one StepRow per instance step
  SimTime stop_after = kNever;             // safety: stop the clock here even if requests remain (then conservation fails)
  AdmissionCheck admission = AdmissionCheck::kPools;
  /// --admission v2's rules (docs/cost_model.md): kCurrent, SGLang's V2 coordinator at 09f8170
  /// (sim/serving/admission_policy.cpp, V2CoordinatorAdmission); kOlder, the HiCache-backing ledger of PR #35488.
  V2Coordinator v2_coordinator = V2Coordinator::kCurrent;
  /// kCurrent: the coordinator's expanded indexer pages per rank; -1 = unbounded (the capacity model does not size
  /// that allocator: assumed large enough unless a caller says otherwise).
  int64_t v2_indexer_pages = -1;
  int32_t max_retries = 8;                 // aborts (host pool exhausted) before a request is rejected
  ClientSpec clients;
  // The radix prefix cache of each rank (sim/serving/prefix/rank_prefix_cache.h): matched prompt pages are not
  // prefilled or transferred again. Takes effect when the workload names prefix blocks (Workload::block_tokens > 0).
  bool prefix_cache = false;
  std::function<void(int64_t)> on_request_done;  // requests finished or rejected so far, after each (progress)
};

struct RequestOutcome {
  int64_t id = 0;
  int32_t input_tokens = 0, output_tokens = 0;
  int32_t gpu = -1;          // global rank index (a rank is one GPU under attention DP)
  SimTime arrival = 0, admitted = -1, prefill_start = -1, first_token = -1, ready = -1, finish = -1;
  int64_t selected = 0, misses = 0;  // over all its decode steps and layers (last attempt)
  int32_t decoded = 0;       // tokens produced by decode steps (last attempt)
  int32_t retries = 0;       // aborted attempts (host pool exhausted under AdmissionCheck::kLogicalOnly or kV2)
  int32_t retractions = 0;   // times it was retracted or preempted while decoding (sim/serving/retraction.cpp)
  int32_t cached_tokens = 0; // prompt tokens its (last) admission found in its rank's prefix cache: not prefilled
  bool rejected = false;     // could never fit on an empty rank, or out of retries
  // Dynamic residency: the state it last decoded in, and its decode step when demoted to swap (-1 = never).
  Residency residency = Residency::kNone;
  int32_t demoted_at_step = -1;
};

struct StepRow {
  int32_t instance = 0;
  int64_t index = 0;
  SimTime start = 0, end = 0;
  int32_t requests = 0;      // decoding, over the instance's ranks
  int32_t in_flight = 0;     // requests sent and not yet finished or rejected, over the whole system, at step start
  int64_t selected = 0, misses = 0;
  double h2d_bytes = 0, backup_bytes = 0;
  SimTime prefill = 0;       // colocated chunked prefill run before the decode part of this step (0 = none)
  int64_t prefill_tokens = 0;
  StepCost slowest;          // the critical rank's breakdown (its sum + prefill is the step length)
  // Dynamic residency: requests in swap mode, demotions made for this step, ranks that ran the swap graph (a rank
  // runs it as soon as one of its requests is in swap mode; the others run the resident graph).
  int32_t swap_requests = 0, demotions = 0, swap_graph_ranks = 0;
};

struct LinkUsage {
  std::string name;
  double capacity = 0;       // bytes/s
  double bytes = 0;          // carried
};

struct ServingResult {
  std::string scenario, workload, miss_model;
  KvMode mode = KvMode::kHiSparse;
  OverlapMode overlap = OverlapMode::kNone;
  AdmissionCheck admission = AdmissionCheck::kPools;
  std::string link_model;
  std::string prefill_mode;      // "pd" (prefill instances + RDMA), "pd-external" (TTFT not modelled), "colocated"
  std::string collective_link;   // what the all-to-all and all-reduce are priced at (sim/serving/ranks.h)
  int32_t clients = 0;           // closed-loop clients (0 = open loop)
  int32_t decode_gpus = 0, decode_instances = 0, prefill_instances = 0;
  int32_t ranks = 0, gpus_per_rank = 1;  // decode ranks over all instances; GPUs per rank (attention TP)
  int64_t arrivals = 0, admitted = 0, finished = 0, rejected = 0;
  int64_t aborts = 0;            // attempts aborted because a host-pool allocation failed (then retried or rejected)
  std::string first_abort;       // the first such failure, as SGLang logs it
  SimTime last_arrival = 0, makespan = 0;
  uint64_t events = 0;
  std::vector<RequestOutcome> requests;
  std::vector<StepRow> steps;
  StepCost gpu_cost_total;       // summed over all rank-steps where the rank had requests
  int64_t gpu_steps_busy = 0;    // rank-steps with requests
  int64_t decode_tokens = 0;     // every token a decode step produced (wasted ones of aborted attempts included)
  int64_t request_steps = 0;     // decode steps summed over requests (decode_tokens / request_steps: MTP's tokens per step)
  int64_t wasted_decode_tokens = 0;
  // Per instance step that decoded: its requests ÷ its length, tokens/s (kept without record_steps: the decode-side
  // throughput SGLang's decode log prints as "gen throughput" over a window of decode batches).
  std::vector<double> step_tokens_per_s;
  int64_t prefill_tokens = 0;    // colocated chunked prefill tokens
  int64_t selected = 0, misses = 0;
  double miss_flow_bytes = 0;    // bytes the miss copies carried (conservation: = misses × row_bytes × gpus_per_rank)
  double admission_h2d_bytes = 0, backup_bytes = 0, rdma_bytes = 0, staging_bytes = 0;
  // Transfer granularity (sim/cost/terms/transfer_granularity.h): host → device loads of the miss copies (one per layer of a
  // rank-step that missed) and the batched all-layer device → host copies of colocated staging (one per request).
  int64_t miss_transfers = 0, staging_copies = 0;
  double row_bytes = 0;
  // Dynamic residency: demotions to swap mode and the device-pool tokens they released (SGLang's
  // num_dynamic_demotions / num_dynamic_demoted_tokens); rank-steps on the resident and on the swap graph.
  int64_t demotions = 0, demoted_tokens = 0, resident_graph_steps = 0, swap_graph_steps = 0;
  // Retraction / preemption (sim/serving/retraction.cpp): which engine's rule ran ("none" when admission reserves whole
  // requests), requests retracted, the prompt + decoded tokens whose KV they dropped, the tokens prefilled again and the
  // prefill time that took (the chunks' share of the pass, summed over ranks).
  std::string retraction = "none";
  int64_t retractions = 0, retracted_tokens = 0, recomputed_tokens = 0;
  SimTime recompute_ns = 0;
  // The radix prefix cache (on only with ServingOptions::prefix_cache and a workload naming prefix blocks): the pool
  // that holds it, the input and hit tokens of finished requests (hit: matched in the cache at their last admission,
  // not prefilled), pages inserted and evicted; per rank, the most pages held at once (the largest over the ranks) and
  // the time-weighted mean (over the makespan, averaged over the ranks); bytes per cached token of that pool.
  bool prefix_cache = false;
  std::string prefix_cache_pool;
  int64_t prefix_input_tokens = 0, prefix_hit_tokens = 0, prefix_inserted_pages = 0, prefix_evicted_pages = 0;
  int64_t prefix_peak_tokens_per_rank = 0;
  double prefix_mean_tokens_per_rank = 0, prefix_bytes_per_token = 0;
  // Multi-turn sessions (RequestSpec::session_id): sessions in the workload, and turns held past their arrival until
  // the previous turn's finish + think time.
  int64_t sessions = 0, held_turns = 0;
  std::vector<LinkUsage> links;
  // --admission v2 under the current coordinator: admissions (re-admissions after a retraction included) by
  // cpu_ref::V2Admit outcome, index 0 = run as V2, the others the reasons it ran as standard.
  std::string v2_coordinator;    // "current" / "older" under --admission v2 in HiSparse mode, else ""
  std::array<int64_t, 6> v2_admissions{};
  // --admission v2 under the current coordinator, colocated prefill (sim/serving/v2_prefix_eviction.h): whether the
  // staged prefixes stayed in device rows (v2_partial_eviction), the times HiCache cut a prefix, the prefix tokens it
  // moved off the device, and the mean over V2 requests of their evicted share (E - B) / E when they left the rank.
  bool v2_partial_eviction = false;
  int64_t v2_evictions = 0, v2_evicted_tokens = 0, v2_prefixes_released = 0;
  double v2_evicted_share_mean = 0;
  // Pool sizes used for admission, per rank (tokens).
  int64_t device_pool_tokens = 0, logical_pool_tokens = 0, host_pool_tokens = 0;
};

/// Runs the workload to completion (every admitted request finishes) and checks conservation; throws
/// hisparse::Error if a conservation check fails.
ServingResult run_serving(const Scenario& scenario, const Workload& workload, const ServingOptions& options,
                          ChromeTrace* trace = nullptr);

/// The default statistical miss model for a scenario (layers, K, H from it; warm-up and steady curve from the
/// measured miss surface default_miss_surface(top_k) at the scenario's H/K, policy sglang-lru; see sim/miss/miss_surface.h).
StatisticalMissParams default_miss_params(const Scenario& scenario);

}  // namespace hisparse::sim
