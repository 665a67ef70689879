// @brief The replay engine behind `hisparse replay`: streams a top-k trace through every (policy, buffer size)
// with one independent state per (request, layer), in parallel across layers, and accumulates the counters.
//
// Memory: without an offline policy the engine holds one batch of step records (batch_bytes) plus, per layer
// and configuration, one policy state (O(H)); it does not grow with trace length. An offline policy (belady)
// needs each layer's whole future, so then one request's records are held at a time (steps x layers x K x 4 B).
// Output does not depend on the thread count: every result lands in a slot fixed by (configuration, layer,
// step), and the accumulators are integer sums.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

  /// Share of selected entries that needed no load (hits and newest hits).
  double hit_rate() const;
  double mean_misses_per_step_layer() const;
  double mean_misses_per_decode_step() const;
  double fast_path_fraction() const;
};

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
  std::vector<int32_t> buffer_sizes;     // H values, each >= top_k
  int64_t row_bytes = 1152;              // bytes of one KV row per layer (DeepSeek-V3.2 fp8 MLA: 656; bf16: 1152)
  int threads = 1;
  size_t batch_bytes = size_t{64} << 20;  // step records held at once (online policies only)
  bool keep_step_rows = false;            // hand per-step rows to the row sink
  std::function<void(const ReplayProgress&)> progress;  // called after every batch (main thread)
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
};

/// Replays `source` from its current position to the end. Throws hisparse::Error on bad options or bad records
/// (naming request, layer, step). `row_sink` receives each finished request's rows when keep_step_rows is set.
ReplayResult run_replay(traces::TraceSource& source, const ReplayOptions& options,
                        const std::function<void(const ReplayRequestRows&)>& row_sink = {});

}  // namespace hisparse::sim
