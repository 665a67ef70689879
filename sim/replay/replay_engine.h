// @brief `run_replay`, the entry of `hisparse replay` and of every library caller, and the replay's result types: the
// trace streamed once through every (policy, buffer size) with one independent state per (request, layer), by the one
// replay driver (sim/replay/replay_driver.h) over the counting CPU session (sim/replay/replay_cpu_session.h); the
// CUDA replay runs the same driver over its own session.
//
// Memory: the driver holds batch_bytes of step records per slot (at least one step) plus, per row and configuration,
// one policy state (O(H)); it does not grow with trace length. An offline policy (belady) needs the layer's future:
// the driver's look-ahead stage (sim/replay/replay_lookahead.h) holds a window of at most lookahead_bytes (records
// plus one next-use index per offline buffer size) of one request at a time. A request that fits the window is
// replayed exactly as with its whole future; a longer one slides the window by half its length, so every decision
// sees at least half a window ahead: belady then is the optimum *for that look-ahead*, an upper bound on the true
// optimum's misses (ReplayResult::lookahead_cut_requests counts them).
// Output does not depend on the thread count: every result lands in a slot fixed by (configuration, request, layer,
// step), reduced in trace order, and the accumulators are integer sums.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/hisparse_v2.h"
#include "cpu_ref/memory/hisparse_v2_session.h"
#include "traces/trace_source.h"

namespace hisparse::sim {

/// One (request, layer, step) of one configuration, as the per-step CSV prints it.
struct ReplayStepRow {
  int32_t seq_len = 0;
  int32_t selected = 0;
  int32_t hits = 0;
  int32_t newest_hits = 0;
  int32_t misses = 0;
};

/// Every counter of one (policy, buffer size) over the whole trace.
struct ReplayConfigStats {
  std::string policy;
  int32_t buffer_size = 0;
  int64_t selected = 0;
  int64_t hits = 0;
  int64_t newest_hits = 0;
  int64_t misses = 0;
  int64_t h2d_bytes = 0;
  int64_t step_layers = 0;            // (request, step, layer) triples
  int64_t fast_path_step_layers = 0;  // of which on the fast path (n <= H)
  int64_t decode_steps = 0;           // (request, step) pairs
  std::vector<int64_t> miss_hist;       // [top_k + 1] step-layers with m misses
  std::vector<int64_t> step_miss_hist;  // [layers * top_k + 1] decode steps with m misses summed over layers
  std::vector<int32_t> step_misses;     // misses of every decode step summed over layers, in step_seq_lens order
                                        // (what `replay --scenario` prices step by step)
  // The parts of the two histograms from cold-start steps (cold_start_step); the steady state is the rest. Empty
  // reads as all zeros.
  std::vector<int64_t> cold_miss_hist;
  std::vector<int64_t> cold_step_miss_hist;

  /// Share of selected entries that needed no load (hits and newest hits); NaN when nothing was selected.
  double hit_rate() const;
  double mean_misses_per_step_layer() const;
  double mean_misses_per_decode_step() const;
  double fast_path_fraction() const;
};

/// Whether step `s` of a request (counted from its first step) is cold start at buffer size H and top-k K: the first
/// step and the warm-up steps 1..ceil(H/K), the rule of the miss surfaces (warmup_steps_for), while the
/// buffer still fills with the request's own rows. Later steps are the steady state.
bool cold_start_step(int64_t s, int32_t H, int32_t K);

/// hist − cold, entry by entry (the steady-state histogram; `cold` may be empty or shorter).
std::vector<int64_t> steady_histogram(const std::vector<int64_t>& hist, const std::vector<int64_t>& cold);

/// Nearest-rank quantile of a histogram (index = value): the smallest value v with count(<= v) >= ceil(q * total).
int64_t histogram_quantile(const std::vector<int64_t>& hist, double q);

struct ReplayProgress {
  int64_t requests_done = 0;
  int64_t requests_total = 0;
  int64_t steps_done = 0;
  int64_t entries_done = 0;  // selected entries replayed, summed over configurations
  double seconds = 0;
};

struct ReplayOptions {
  std::vector<std::string> policies;     // registry names (cpu_ref/policies/registry.h)
  /// The V2 rules of every hisparse-v2 policy that names none itself (cpu_ref::with_v2_coordinator).
  V2Coordinator v2_coordinator = V2Coordinator::kCurrent;
  std::vector<int32_t> buffer_sizes;     // H values, each >= top_k
  int64_t row_bytes = 1152;              // bytes of one KV row per layer (DeepSeek-V3.2 fp8 MLA: 656; bf16: 1152)
  int threads = 1;
  size_t batch_bytes = size_t{4} << 20;  // lists per slot of the CPU session (>= 1 step)
  size_t lookahead_bytes = size_t{1} << 30;  // offline policies: records + next-use indexes of the look-ahead window
  bool keep_step_rows = false;            // hand per-step rows to the row sink
  /// Run sglang-lru through its cpu_ref policy object (the plan-producing reference) instead of the counting form;
  /// same output (the differential tests and bench_replay compare them).
  bool reference_lru = false;
  std::function<void(const ReplayProgress&)> progress;  // called after requests are reduced (main thread)
  /// Opens another cursor on the same trace (called from several threads at once), so that the driver can run
  /// requests side by side in lanes when there are more threads than layers; without it requests run one at a time.
  std::function<std::unique_ptr<traces::TraceSource>()> open_trace;
  /// hisparse-v2 over the whole trace as one batch (cpu_ref/memory/hisparse_v2_session.h): the pools it shares;
  /// unset, each request is admitted alone from its first step (the short-prefix gate only). run_replay fills
  /// v2_schedules from them (sim/replay/replay_v2_session.h), reading the trace once more through open_trace.
  std::optional<cpu_ref::V2SessionPools> v2_pools;
  cpu_ref::V2Schedules v2_schedules;
};

/// The rows of one request, [config][layer][step], configs in ReplayResult::configs order.
struct ReplayRequestRows {
  int64_t request_id = 0;
  std::vector<int64_t> steps;  // step index of each column
  std::vector<std::vector<std::vector<ReplayStepRow>>> rows;
};

struct ReplayResult {
  traces::TraceMeta meta;
  int64_t requests = 0;
  int64_t decode_steps = 0;
  std::vector<ReplayConfigStats> configs;  // policy-major, buffer sizes in the order given
  std::vector<int32_t> step_seq_lens;      // seq_len of every decode step in trace order (the advice's context mix)
  std::vector<int32_t> step_index;         // of every decode step, in the same order: steps since its request's first
  // What the run cost (not part of replay.json, which stays deterministic).
  int64_t entries = 0;             // selected entries replayed, summed over configurations
  double seconds = 0;              // run_replay wall time
  double read_seconds = 0;         // of which reading step records (and building the look-ahead's futures)
  int threads = 1;                 // worker threads used (<= rows)
  size_t peak_window_bytes = 0;    // the session's staging plus one record per lane (bytes)
  // Offline policies only: the look-ahead window.
  int64_t lookahead_steps = 0;          // steps per window (0: no offline policy)
  size_t peak_lookahead_bytes = 0;      // records + next-use indexes held at once
  int64_t lookahead_cut_requests = 0;   // requests longer than the window (belady with a bounded look-ahead)
};

/// Replays `source` (every request of its request_ids()). Throws hisparse::Error on bad options or bad records
/// (naming request, layer, step). `row_sink` receives each finished request's rows when keep_step_rows is set, in
/// trace order. The one driver over the counting CPU session (run_replay_cpu_session, the path `--backend cuda`
/// shares with its own session); offline policies through its look-ahead stage.
ReplayResult run_replay(traces::TraceSource& source, const ReplayOptions& options,
                        const std::function<void(const ReplayRequestRows&)>& row_sink = {});

/// Adds one finished request's rows (every configuration, layer and step) to `result`: counters, histograms (cold
/// start apart), decode steps, step_seq_lens, step_index, entries. The CUDA replay reduces through it; integer sums, so any order gives the same.
void add_request_rows(ReplayResult& result, const ReplayRequestRows& rows, const std::vector<int32_t>& seq_lens,
                      int64_t row_bytes);

}  // namespace hisparse::sim
