// @brief The typed requests of the library, one per command (plan, advise, simulate, replay) with what they share: the
// scenario choice (name, overrides, cost terms, calibrations, overlap) and the miss choice. Standard types only,
// so the Python module binds these very structs (python/bindings/module.cpp) without the library's dependencies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/scenario_overrides.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/plan/cache_strategies.h"

namespace hisparse::sim {

/// What a command names to build its scenario and cost model.
struct ScenarioChoice {
  std::string scenario;               // deployment name (scenarios/deployments) or YAML path
  ScenarioOverrides overrides;
  std::string cost_params = "auto";   // auto (the hardware file's cost_model) or a YAML path
  std::string calibration = "auto";   // auto | none | a YAML of `hisparse bench --calibrate`
  std::string step_calibration = "auto";  // auto | none | a YAML of `hisparse bench step --fit`
  std::string attention_table = "auto";   // auto (the hardware file's) | none (roofline) | a FlashMLA timing CSV
  std::string op_tables = "auto";         // auto (scenarios/measurements/engine_ops.yaml) | none | an index YAML
  std::optional<OverlapMode> overlap;     // unset: the cost parameters'
  bool require_sparse_indexer = false;    // advise and simulate model HiSparse only
};

/// Where the misses of plan / advise / replay --scenario come from. A given fraction or the surface (default
/// default_miss_surface(top_k)) is the model; a trace, when given, is replayed at every buffer size and the model fills in
/// where it measured nothing.
struct MissChoice {
  std::string surface;              // miss surface name or .yaml path ("" = default_miss_surface(top_k))
  std::optional<double> fraction;   // a constant per-layer miss fraction instead of the surface, in [0, 1]
  std::string trace;                // top-k trace replayed at every buffer size ("" = none)
  std::string policy = "sglang-lru";
  int threads = 1;                  // replay threads for the trace (as MissCurves::from_trace reads it)
  bool rescale_trace_top_k = false; // a trace of another top_k is replayed at the same H/K, applied by n/H
  /// The surface's steady level at this calibration scale instead of its file's (steady fractions × scale / the
  /// file's steady_scale): a trial value of `hisparse fidelity --fit`; unset for every other command.
  std::optional<double> steady_scale;
};

/// `hisparse check` (run_check, sim/api/check_request.h): the pools of the deployment against a workload's longest
/// request, before anything is simulated.
struct CheckRequest {
  ScenarioChoice setup;
  std::string workload;        // name / YAML / trace whose longest request is checked ("" = start-up checks only)
  std::vector<int32_t> ratios;  // the C4 release table's host_to_device_ratio values (empty: 1 … 8)
  std::string command = "check";
};

/// `hisparse plan` (run_plan, sim/api/plan_request.h).
struct PlanRequest {
  ScenarioChoice setup;
  MissChoice misses;
  std::vector<int64_t> seq_lens;    // empty: the planner's defaults, or the workload's p50/p90/p99/max
  std::string workload;             // name / YAML / trace whose request lengths set the lengths ("" = none)
  std::vector<int32_t> sweep_buffer_sizes;  // empty: top_k × 1 … 8
  std::vector<int32_t> sweep_ratios;        // empty: the default ratios
  /// The sweeps are the deployment's own H and ratio only (a sweep grid point is one setting).
  bool single_setting = false;
  std::optional<int64_t> batch_cap;  // largest batch per rank considered
  bool memory_only = false;          // --limits memory
  StrategyOptions strategies;        // recall_file is read by run_plan (recall_json is filled there)
  std::string command_line;          // for the reports' provenance
  std::string command = "plan";      // what errors name first ("sweep <point>" for a sweep's)
};

/// `hisparse advise` (run_advise, sim/api/advise_request.h).
struct AdviseRequest {
  ScenarioChoice setup;              // setup.overrides must leave H, ratio and max_running_requests unset: advised
  MissChoice misses;
  std::vector<int64_t> seq_lens;     // one advice each; empty: 16K,32K,64K,128K unless a workload is given
  std::string workload;              // one advice for its decode context mix ("" = none)
  int mix_classes = 16;              // length classes of the workload's mix
  std::vector<int32_t> buffer_sizes; // H candidates (empty: top_k × 1 … 8)
  std::vector<int32_t> ratios;       // host_to_device_ratio candidates (empty: the default ratios)
  std::string command_line;          // for the reports' provenance
  // The robustness check (sim/advise/robustness.h): the rule that picks the recommendation over every miss source and
  // assumed cost range, and miss surfaces to weigh besides the shipped ones (names or .yaml paths).
  std::string decision_rule = "worst-case";  // worst-case | expected | min-regret | default-source
  std::vector<std::string> compare_miss_curves;
  // `--layouts`: the layout comparison (run_advise_layouts) instead of the HiSparse settings.
  bool layouts = false;
};

/// `hisparse simulate` (load_simulation, sim/api/simulate_request.h).
struct SimulateRequest {
  ScenarioChoice setup;
  std::optional<int32_t> prefill_instances;  // replaces the deployment's prefill instance count (PD only)
  std::string link_model;                    // maxmin | constant ("" = the cost parameters')
  std::string workload;                      // name, YAML or .jsonl/.csv trace
  /// Both > 0: instead of `workload`, one request of these lengths (closed-loop clients cycle it: `hisparse fidelity`).
  int32_t fixed_input_tokens = 0, fixed_output_tokens = 0;
  std::optional<double> duration_s;          // keep the arrivals of the first seconds
  /// statistical (the surface at the deployment's H/K, or fitted to misses.trace) | trace (replay misses.trace with
  /// misses.policy) | placeholder (10 % once n > H). misses.fraction replaces the statistical fraction.
  std::string miss_model = "statistical";
  MissChoice misses;
  std::string admission = "pools";  // pools | logical | v2 (sim/serving/admission_policy.h)
  /// --admission v2's rules: current (SGLang's V2 coordinator at 09f8170, admit_request) | older (the HiCache-backing
  /// ledger of PR #35488, sim/serving/admission_ledger.h); core/hisparse_v2.h V2Coordinator.
  std::string v2_coordinator = "current";
  int32_t max_retries = 8;
  /// The radix prefix cache (sim/serving/prefix/rank_prefix_cache.h): auto (SGLang's default for the deployment: on
  /// when colocated, off on a PD decode server) | on | off. It acts only on workloads that name prefix blocks.
  std::string prefix_cache = "auto";
  // What run_simulate runs (sim/api/simulate_outcome.h); load_simulation alone reads none of these.
  std::string mode = "both";           // full | hisparse | dynamic | both (full, hisparse) | all (the three)
  bool both_overlaps = false;          // each run under overlap none, then two-batch (`--overlap both`)
  std::vector<int32_t> concurrency;    // closed-loop client levels, ascending; empty: the workload's arrivals;
                                       // several: a concurrency sweep
  double think_time_s = 0;             // closed loop: a client's wait after a reply
  int64_t num_requests = 0;            // closed loop: requests per level (0: 4 per client, at least 64)
  std::optional<double> timeline_start_s;  // Chrome-trace window start (unset: min(60 s, half the arrivals' span))
  double timeline_length_s = 1.0;      // its length (0: no timeline)
  bool check_work = true;              // print the up-front estimate, refuse over an hour (a sweep has its own)
  bool force = false;                  // run past that refusal
};

/// `hisparse replay` (run_replay_request, sim/api/replay_request.h). Sizes are in tokens, also with page_size (the
/// replay converts them).
struct ReplayRequest {
  std::string trace;                      // native file, .npy directory or .jsonl (a label when hooks open the trace)
  std::vector<int32_t> buffer_sizes = {2048, 3072, 4096, 6144, 8192};  // replayed in ascending order
  std::vector<std::string> policies = {"sglang-lru", "belady"};
  /// hisparse-v2's admission rules: current (SGLang 09f8170) | older (ca0edd9); core/hisparse_v2.h V2Coordinator.
  std::string v2_coordinator = "current";
  /// hisparse-v2 over the whole trace as one batch (cpu_ref/memory/hisparse_v2_session.h): the device KV pool the
  /// requests share, tokens; 0 keeps the per-request rule (each request alone, its whole prefix on the host).
  int64_t v2_device_pool_tokens = 0;
  int64_t v2_host_pool_tokens = 0;  // the session's host capacity for admitted prefixes; 0: unbounded
  int64_t v2_indexer_pages = -1;    // the session's expanded indexer pages; -1: unbounded
  int32_t v2_node_tokens = 0;       // radix node length of a prefix (a node per prefill chunk); 0: one node
  std::string initial_state;              // identity | empty; "" keeps the trace's
  std::optional<int32_t> top_k;           // replaces the trace's (>= 1)
  int64_t row_bytes = 1152;               // bytes of one KV row of one layer
  /// Whether row_bytes was given: an advice's plan (plan_replay_advice) replaces an ungiven one by the model's row.
  bool row_bytes_given = false;
  int threads = 0;                        // 0: the hardware threads; results are identical for any
  int64_t lookahead_mb = 1024;            // offline policies' look-ahead window, MiB
  std::string backend = "cpu";            // cpu | cuda (needs ReplayHooks::cuda)
  int32_t page_size = 0;                  // replay in pages of this many tokens; 0: tokens
  /// IndexShare: the trace's shared layers, declared as index_topk_freq / index_skip_topk_offset (core/topk_schedule.h);
  /// each shared layer replays its anchor's list. 1 = every layer its own.
  int32_t shared_topk_group = 1;
  int32_t shared_topk_offset = 1;
  std::string per_step_csv;               // one row per (policy, buffer, request, layer, step) to this file ("" = none)
  bool keep_step_rows = false;            // hand the per-step rows to ReplayHooks::rows (implied by per_step_csv)
};

}  // namespace hisparse::sim
