// @brief The serving engine: it sequences events over its entities (after Vidur: each owns its state changes):
//   sim/serving/rank.h           a dp rank: its requests, pools, ledger, links, current step
//   sim/serving/request_state.h  a request's attempt: rank, prefill progress, length, steps, residency, transfer
//   sim/serving/admission_policy.h  admission as an interface: pools, logical, v2
// and its member functions, one concept per file:
//   sim/serving/serving_simulation.cpp   construction, topology, event dispatch, run_serving
//   sim/serving/admission.cpp    arrivals, closed-loop clients, pool admission (and the v2 ledger's), aborts and
//                                retries, completion
//   sim/serving/prefill.cpp      prefill instances + RDMA (PD), colocated chunked prefill and the staging backup
//   sim/serving/decode_step.cpp  lockstep decode steps of an instance's ranks
//   sim/serving/prefix_cache.cpp the ranks' radix prefix caches: the match at admission, eviction for room, insert
//                                at finish
//   sim/serving/sessions.cpp     multi-turn sessions: a turn is released after the previous one's finish + think time
//   sim/serving/conservation.cpp the result and its conservation checks
// Internal to sim/: include only from those files.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cost/step/decode_cost_model.h"
#include "sim/cost/step/pipeline_step.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/network/network_resource.h"
#include "sim/serving/admission_ledger.h"
#include "sim/serving/admission_policy.h"
#include "sim/serving/pools.h"
#include "sim/serving/rank.h"
#include "sim/serving/request_state.h"
#include "sim/serving/ranks.h"
#include "sim/serving/serving_simulation.h"
#include "sim/engine/simulator.h"

namespace hisparse::sim::serving {

enum Kind : uint32_t { kArrival, kPrefillDone, kPhaseA, kIoStart, kComputeDone, kGpuDone, kStepEnd, kDecodeStart, kRelease };
enum FlowType : int64_t { kRdma = 1, kAdmitH2d = 2, kMissFlow = 3, kBackup = 4, kStaging = 5 };
constexpr int64_t cookie(FlowType t, int64_t idx) { return (static_cast<int64_t>(t) << 56) | idx; }

struct Instance {
  int32_t first_rank = 0, ranks = 0;
  bool stepping = false;
  SimTime step_start = 0, decode_start = 0, barrier = 0;
  int32_t outstanding = 0, in_flight = 0;
  int64_t index = 0, prefill_tokens = 0;
  SimTime moe_time = 0, prefill = 0;
  SimTime draft_time = 0;  // MTP draft passes after the MoE phase
  SimTime pipeline_time = 0;  // pp > 1: the rest of the cycle after one stage's step (the other stages and hops)
};

struct PrefillInstance {
  std::deque<int64_t> queue;
  int64_t current = -1;
};

enum class PrefillMode { kPd, kPdExternal, kColocated };
/// What happens when running requests grow past the pool (sim/serving/retraction.cpp).
enum class Retraction { kNone, kSglang, kVllm };

class Engine final : public EventHandler, public FlowListener {
 public:
  Engine(const Scenario& sc, const Workload& w, const ServingOptions& opt, ChromeTrace* trace);
  ServingResult run();
  void on_event(Simulator& sim, const Event& e) override;
  void on_flow_done(Simulator& sim, int64_t c, const FlowDone& d) override;

 private:
  OverlapMode overlap() const { return opt_.cost.overlap; }
  int64_t paged(int64_t t) const { return (t + page_ - 1) / page_ * page_; }
  const RequestSpec& spec(int64_t i) const { return specs_[static_cast<size_t>(i)]; }
  Rank& rank_of(int64_t i) { return ranks_[static_cast<size_t>(rt_[static_cast<size_t>(i)].rank())]; }
  /// Starts one flow per GPU of the rank (each GPU of an attention-TP rank holds the whole latent).
  void start_rank_flows(const Rank& r, double bytes, SimTime latency, double max_rate, bool h2d, bool d2h, bool dram,
                        bool nic, int64_t cookie_value);

  // serving_simulation.cpp
  void build_topology();
  // admission.cpp
  void arrive(int64_t i);                        // the workload's arrival event (a later turn may wait: sessions.cpp)
  void enter(int64_t i);                         // the request is sent: it joins the waiting queue
  int64_t issue(SimTime at, int32_t client);     // closed loop: client `client` sends its next request
  int64_t next_closed_loop_spec(int32_t client, SimTime* at);  // which workload request it is (sessions.cpp)
  PoolNeed needs(int64_t i) const;
  void try_admit();
  void admitted(int64_t i, int32_t rank, const RankPrefixCache::Hold& hold);
  bool host_alloc(int64_t i, int64_t tokens, const char* where);  // false: aborted
  void abort_request(int64_t i, int64_t pages, const char* where);
  void complete(int64_t i);
  void request_done(int64_t i);                  // finished or rejected: frees a closed-loop client
  // prefill.cpp
  void start_prefill(int32_t p);
  void prefill_done(int32_t p);
  void start_transfer(int64_t i);
  void rdma_done(int64_t i);
  void make_ready(int64_t i);
  SimTime plan_prefill(Instance& inst);          // colocated: this step's chunks; returns the pass time
  void prefill_chunks_done(Instance& inst);
  void staging_done(int64_t i);
  /// v2 current: staging done, the request keeps its prefix in device rows, evicting staged prefixes if short.
  void keep_v2_prefix(Rank& g, int64_t i, int64_t buffer);
  /// v2 current: a step's misses of request i less those its device-resident prefix head serves.
  int64_t v2_resident_head_misses(const Rank& g, int64_t i, int32_t n, int64_t misses) const;
  // decode_step.cpp
  void start_step(int32_t ii);
  void start_decode(int32_t ii);
  void plan_rank(Rank& g);
  void begin_io(Rank& g, int32_t gi);
  void maybe_done(int32_t gi);
  void rank_finished(int32_t gi);
  void step_end(int32_t ii);
  void trace_rank(const Rank& g, const Instance& inst, SimTime now);
  // residency.cpp (dynamic residency)
  int64_t buffer_tokens(int64_t i) const;        // the device pages of request i in swap mode
  int64_t reclaimable(const Rank& g) const;      // device tokens demoting every resident request would free
  bool demote_longest(Rank& g);                  // false: no resident request holds more than its buffer
  void make_device_room(Rank& g, int64_t tokens);
  void grow_residents(Rank& g);
  // retraction.cpp (decode retraction / recompute preemption)
  int64_t prompt_tokens(int64_t i) const;        // what its prefill computes: the prompt + tokens decoded before a retraction
  int64_t reserved_output(int64_t i) const;      // output tokens admission reserves KV for
  int64_t growth_tokens(const Rank& g, int64_t i) const;  // pages (tokens) its next step needs beyond what it holds
  void grow_or_retract(Rank& g);
  bool grow_prefill(Rank& g, int64_t i, int64_t upto);  // vLLM: blocks for a prefill chunk; false: i was preempted
  void retract(Rank& g, int64_t i);
  // prefix_cache.cpp
  void enable_prefix_caches();
  int64_t prefix_max_pages(int64_t i) const;     // SGLang matches at most prompt − 1 tokens, whole pages
  void prefix_room(const Rank& g, int64_t i, PoolNeed& room) const;  // lowers the cache pool's need by hit + evictable
  RankPrefixCache::Hold acquire_prefix(Rank& g, int64_t i, PoolNeed& need);  // locks the match, evicts for the rest
  void cache_prompt(Rank& g, int64_t i);         // its prompt's KV is complete: shared from now on
  void release_prefix(Rank& g, int64_t i, bool insert);  // finished (insert) or aborted / retracted
  int64_t evict_for_host(Rank& g, int64_t i, int64_t tokens);  // land() with eviction: pages still short
  void report_prefix_cache(ServingResult& r) const;
  // sessions.cpp
  void link_sessions();
  void link_closed_loop_sessions();               // --concurrency over a sessions workload: a client per session
  bool turn_waits(int64_t i);                    // at its arrival: held until the previous turn's finish + think time
  void turn_done(int64_t i);                     // finished or rejected: releases the session's next turn
  // conservation.cpp
  ServingResult finish();

  const Scenario& sc_;
  const Workload& w_;
  const ServingOptions& opt_;
  ChromeTrace* trace_;
  bool hisparse_;                 // HiSparse's pools and backup: HiSparse and dynamic modes
  bool dynamic_;                  // dynamic residency
  ServingRanks layout_;
  StepEstimator step_;            // the one step model: one GPU of a rank (rank scenario; pp > 1: of the binding
                                  // pipeline stage, core/pipeline_stages.h)
  const DecodeCostModel& cost_;   // step_'s per-operation times
  Scenario prefill_scenario_;     // colocated: the decode instance running a prefill pass
  DecodeCostModel prefill_cost_;
  PrefillMode prefill_mode_ = PrefillMode::kPd;
  Retraction retraction_ = Retraction::kNone;
  std::unordered_map<int64_t, int64_t> computed_extent_;  // retracted request: the prefix it had computed before
  Simulator sim_;
  NetworkResource net_;
  uint32_t handler_ = 0;
  const MissModel* miss_ = nullptr;
  std::unique_ptr<MissModel> own_miss_;
  int32_t K_ = 0, H_ = 0, page_ = 64, kv_layers_ = 0, gpr_ = 1;
  int pp_ = 1;              // pipeline stages (decode.pp)
  StageLink stage_link_;    // pp > 1: the link between stages
  int64_t micro_misses_ = 0;  // misses of the micro-batches whose copies the stage steps ran (all of them without pp)
  int32_t idx_layers_ = 0;  // layers holding indexer keys (top-k anchors + MTP layers)
  double row_ = 0, idx_ = 0;
  // Bytes per prompt token: the KV the PD transfer carries (with the indexer keys apart), and the offloaded cache
  // staged to the host or preloaded to the buffer. MLA: every KV layer's row; DeepSeek-V4: its C4 and C128 entries
  // (one per 4 / 128 tokens; the ≤ window + page tokens each layer keeps are left out), the C4 ones offloaded.
  double kv_bytes_per_token_ = 0, idx_bytes_per_token_ = 0, offload_bytes_per_token_ = 0;
  PoolSizes pool_sizes_;
  bool prefix_cache_ = false;        // ranks hold radix prefix caches (ServingOptions::prefix_cache, prefix blocks)
  std::vector<std::vector<RadixCache::Key>> prefix_keys_;  // per request: its prompt's page keys (prefix_pages.h)
  std::vector<int64_t> prev_turn_, next_turn_;  // sessions (open loop): the previous / next turn's request, −1: none
  std::vector<SimTime> turn_end_;    // when a turn finished or was rejected (−1: not yet)
  std::vector<char> turn_held_;      // a turn that arrived before its previous turn ended
  std::unique_ptr<AdmissionPolicy> admission_;  // --admission (sim/serving/admission_policy.h)
  std::vector<Rank> ranks_;
  std::vector<Instance> instances_;
  std::vector<PrefillInstance> prefill_;
  std::deque<int64_t> waiting_;
  std::deque<int64_t> retry_;        // aborted, waiting for a completion to free pages
  bool admitting_ = false;
  std::vector<RequestSpec> specs_;   // open loop: the workload; closed loop: grows as clients send
  std::vector<RequestOutcome> outcomes_;
  std::vector<RequestState> rt_;
  int64_t to_send_ = 0;              // closed loop: requests still to send
  int64_t in_flight_ = 0;            // sent, not finished or rejected
  // Closed loop over a sessions workload: each session's workload requests in turn order, the next session to hand
  // out (cycling), each client's session and next turn, and the client that sent each request.
  std::vector<std::vector<int64_t>> session_turns_;
  int64_t next_session_ = 0;
  std::vector<std::pair<int64_t, size_t>> client_session_;
  std::vector<int32_t> client_of_;
  ServingResult result_;
};

}  // namespace hisparse::sim::serving
