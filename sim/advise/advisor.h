// @brief The advisor behind `hisparse advise`: the joint choice a user makes before launching SGLang — HiSparse on
// or off, device_buffer_size, host_to_device_ratio and max_running_requests — picked to maximise decode goodput
// (tokens/s with every step within the TPOT SLO) for a context-length mix, by the planner's own model: the batch
// shares one PCIe link per GPU, HBM holds each request's buffer and indexer keys, host DRAM holds the host pools.
//
// Every candidate is evaluated at the largest batch per dp rank that meets every limit; goodput grows with the
// batch (the step time is affine in it), so that batch is the candidate's best operating point and becomes its
// --max-running-requests. The recommendation is the candidate the decision rule prefers over every miss source and
// assumed cost range (sim/advise/robustness.h; by default the best worst-case goodput); ties go to full KV (no host
// memory, nothing on PCIe), then to the smaller host pool, then to the smaller HBM footprint, so HiSparse is never
// recommended where it does not win.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/advise/robustness.h"
#include "sim/plan/capacity_plan.h"
#include "sim/cost/step/context_mix.h"
#include "sim/miss/miss_curve.h"
#include "sim/cost/step/kv_mode.h"
#include "sim/advise/mtp_comparison.h"

namespace hisparse::sim {

struct AdviseOptions {
  std::vector<int32_t> buffer_sizes;   // H candidates, each >= top_k (empty: default_buffer_sweep)
  std::vector<int32_t> ratios;         // host_to_device_ratio candidates, each >= 1 (empty: default_ratio_sweep)
  CostParams cost;
  double host_reserve_bytes = 0;       // host DRAM per node kept for the OS and the server
  int64_t batch_cap = 65536;           // largest batch per rank searched
  std::vector<int64_t> break_even_seq_lens;  // context lengths of the length break-even scan (empty: a default grid)
  // The robustness check (sim/advise/robustness.h): the cases besides the advice's own model, that model's name in
  // the reports, and the rule that picks the recommendation from the goodputs under every case.
  std::vector<UncertaintyCase> uncertainty;
  std::string own_source = "own miss model";
  DecisionRule rule = DecisionRule::kWorstCase;
};

/// One setting, evaluated on one mix.
struct Candidate {
  KvMode mode = KvMode::kFull;
  int32_t buffer_size = 0;             // HiSparse H (0 for full KV)
  int32_t ratio = 0;                   // host_to_device_ratio (0 for full KV)
  int64_t per_rank = 0;                // largest batch per dp rank meeting every limit
  int64_t concurrency = 0;             // per decode instance = per_rank × ranks
  std::string binding_limit;           // key of the limit that sets per_rank (limit_keys())
  std::vector<PlanLimit> limits;       // every limit, per rank, with its formula
  double goodput = 0;                  // decode tokens/s per instance at per_rank (0 when nothing fits)
  double tpot_ms = 0;                  // step time at per_rank
  double hbm_per_request = 0;          // HBM bytes per request on its GPU, mean over the mix
  double host_per_request = 0;         // host bytes per request, mean over the mix
  double misses_per_request_step = 0;  // rows loaded per request and step (all layers), mean over the mix
  double h2d_bytes_per_step = 0;       // per GPU at per_rank
  double host_pool_bytes_per_node = 0;
  int64_t pool_tokens = 0;             // full: max_total_num_tokens; HiSparse: the device pool
  int64_t logical_pool_tokens = 0, host_pool_tokens = 0;
  bool pareto_tpot = false;            // no other candidate has more goodput at a TPOT no longer
  bool pareto_hbm = false;             // no other candidate has more goodput at an HBM per request no larger
  bool feasible() const { return per_rank > 0; }
  std::string name() const;            // "full KV" or "HiSparse H=4096 ratio=5"
};

/// Dynamic residency (SGLang's hisparse_dynamic.py, PRs #23935 / #30266, open): full KV on the GPU while the device
/// pool holds it, the longest requests demoted to HiSparse's buffer when it does not. Shown beside the
/// recommendation, which stays among the merged modes.
struct DynamicPoint {
  int64_t batch_per_rank = 0, concurrency = 0;
  double full_tokens_per_s = 0, hisparse_tokens_per_s = 0, dynamic_tokens_per_s = 0;
  int64_t swap_per_rank = 0;           // dynamic: requests demoted to swap mode at this batch
};
struct DynamicAdvice {
  Candidate candidate;                 // mode kDynamic at the best HiSparse setting's H and ratio (kFull: not evaluated)
  int64_t resident_per_rank = 0;       // largest batch per rank that stays resident (the resident graph)
  double ratio_to_full_at_batch_1 = 0; // dynamic ÷ full KV tokens/s at one request per rank
  std::vector<DynamicPoint> by_concurrency;
  int64_t best_from = -1, best_to = -1;  // batches per rank where dynamic gives more tokens/s than both (-1: none)
};

/// Decode throughput each mode reaches with at most `batch_per_rank` requests per rank in flight (past a mode's
/// own limit the extra requests wait, so its throughput stays at the limit's).
struct ConcurrencyPoint {
  int64_t batch_per_rank = 0;
  int64_t concurrency = 0;
  double full_tokens_per_s = 0, hisparse_tokens_per_s = 0;
  double ratio = 0;                    // hisparse / full (0 when full fits nothing)
};

/// Best goodput of full KV and of the compared HiSparse setting at one context length.
struct SeqLenPoint {
  int64_t seq_len = 0;
  double full_goodput = 0, hisparse_goodput = 0;
  int64_t full_concurrency = 0, hisparse_concurrency = 0;
  std::string full_binding, hisparse_binding;
  double ratio = 0;
};

struct BreakEven {
  std::string hisparse_setting;        // the HiSparse candidate compared with full KV
  std::vector<ConcurrencyPoint> by_concurrency;
  int64_t pays_from_batch_per_rank = -1;  // smallest batch per rank where HiSparse gives more tokens/s (-1: never)
  double ratio_at_batch_1 = 0, ratio_at_batch_2 = 0, best_ratio = 0;
  int64_t best_ratio_batch_per_rank = 0;
  std::vector<SeqLenPoint> by_seq_len;
  int64_t pays_from_seq_len = -1;      // smallest scanned length where HiSparse's goodput beats full KV's (-1: never)
  int64_t loses_again_from_seq_len = -1;  // a longer scanned length where it stops winning (-1: none)
};

/// Tokens/s against TPOT as the batch grows, for one candidate (what a user trades for a lower TPOT).
struct TradeoffCurve {
  std::string setting;
  std::vector<CurvePoint> points;
};

/// A serving simulation of one advised setting (sim/api/advise_simulation.h): `hisparse simulate` of the advice's
/// workload with as many closed-loop clients as the setting's --max-running-requests, launched with that cap.
struct SimulatedRun {
  std::string setting;                // Candidate::name()
  int64_t clients = 0, requests = 0;  // closed-loop clients (= the advised concurrency); requests sent in all
  double tokens_per_s = 0;            // over the whole run, ramp-down included (what `simulate` prints)
  double steady_tokens_per_s = 0;     // while every client had a request in flight (sim/serving/steady_window.h)
  double steady_batch_per_rank = 0;   // mean requests per dp rank then
  double tpot_p50_ms = 0;
  int64_t advised_per_rank = 0;       // the advice's batch per rank for this setting
  double advised_goodput = 0;         // the advice's goodput for it
  std::string command;                // the `hisparse simulate` command that reruns it
};

struct Advice {
  ContextMix mix;
  std::vector<Candidate> candidates;   // full KV first, then HiSparse by H then ratio
  int best = -1;                       // index of the recommendation (-1: nothing fits)
  int runner_up = -1;                  // best by the decision rule with another mode or device_buffer_size
  int best_full = -1;
  // The HiSparse setting the break-even, dynamic-residency and MTP lines, the break-even plot and the reports' HiSparse
  // column describe: the recommendation when it is HiSparse, else the best HiSparse setting by the decision rule.
  int best_hisparse = -1;
  // The best setting by goodput under the advice's own miss source and nominal cost terms alone (the choice without
  // the robustness check); shown as such where it is not the recommendation.
  int best_default_source = -1;
  BreakEven break_even;
  MtpComparison mtp;                   // MTP, HiSparse, both or neither by concurrency (empty: the model has no MTP layer)
  std::vector<TradeoffCurve> curves;   // recommendation, then the best of the other mode
  // Dynamic residency at the best HiSparse setting, beside the recommendation (sim/advise/dynamic_candidate.h);
  // empty (candidate.mode full) unless both full KV and HiSparse fit.
  DynamicAdvice dynamic;
  std::vector<std::string> notes;
  Robustness robustness;               // the candidates under every case; its choice is `best`
  // The advice's figures are a decode-only steady state at full batch; for a workload's advice, the recommendation
  // (and full KV at its own concurrency, when HiSparse is recommended) simulated under that workload, beside them.
  std::vector<SimulatedRun> simulated;
  std::string simulated_note;          // why no simulation ran ("" when it ran or was not asked for)

  const Candidate* recommended() const { return best >= 0 ? &candidates[static_cast<size_t>(best)] : nullptr; }
};

/// The scenario with one setting applied (`mode`, and H and ratio for HiSparse's modes), max_running_requests cleared.
Scenario with_setting(const Scenario& s, KvMode mode, int32_t H, int32_t ratio);
/// a > b beyond floating-point noise (the advisor's tie rule).
bool more_tokens(double a, double b);

/// The dynamic-residency candidate beside the others (sim/advise/dynamic_candidate.cpp).
DynamicAdvice advise_dynamic(const Scenario& s, const ContextMix& mix, const MissCurves& misses, const Candidate& full,
                             const Candidate& hisparse, const AdviseOptions& options);
/// Its line in `advise`'s output (empty when it was not evaluated).
std::string dynamic_text(const DynamicAdvice& d, int ranks);

/// SGLang's --hisparse-config argument, a JSON object on one line: {"top_k": K, "device_buffer_size": H,
/// "host_to_device_ratio": R}.
std::string hisparse_config_json(int32_t top_k, int32_t device_buffer_size, int32_t host_to_device_ratio);

/// The SGLang launch flags of a candidate: `--max-running-requests` is instance-wide in SGLang (each dp rank
/// gets it divided by dp_size), so it is per_rank × ranks.
std::string sglang_flags(const Candidate& c, const Scenario& s);

/// The deployment's own settings as SGLang launch flags, the first line `plan` and `simulate` print: HiSparse's
/// --hisparse-config (top_k, H, ratio) when the deployment enables it, and its --max-running-requests (per instance)
/// when it sets one; "HiSparse off (full KV)" when neither applies.
std::string deployment_sglang_flags(const Scenario& s);

/// The advisor's order: more goodput, then full KV, then the smaller host pool, then the smaller HBM footprint.
bool better_candidate(const Candidate& a, const Candidate& b);

/// Evaluates one setting on `mix` (the scenario's own HiSparse knobs are replaced by `mode`, `H`, `ratio`).
Candidate evaluate_candidate(const Scenario& s, const ContextMix& mix, const MissCurves& misses, KvMode mode,
                             int32_t H, int32_t ratio, const AdviseOptions& options);

/// Every candidate on `mix`, the recommendation, runner-up, break-even and trade-off curves. `misses` must give a
/// fraction at every H of the sweep.
Advice advise(const Scenario& s, const ContextMix& mix, const MissCurves& misses, const AdviseOptions& options);

/// The buffer sizes and ratios `advise` sweeps (options' own, else the planner's defaults with the scenario's).
std::vector<int32_t> advise_buffer_sizes(const Scenario& s, const AdviseOptions& options);
std::vector<int32_t> advise_ratios(const Scenario& s, const AdviseOptions& options);

}  // namespace hisparse::sim
