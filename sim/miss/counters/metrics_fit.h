// @brief A miss surface fitted to production counters (`hisparse calibrate --from-metrics`, docs/capture.md):
// swap-in hits / misses / H2D bytes per interval between Prometheus scrapes (vLLM's HiSparse counters: cache_hits and
// cache_misses, or #56061's hits / lookups / l3_lookups per index group) or per SGLang log line, at the deployment's H and K and the interval's mean context n, binned by n/H exactly as
// sim/miss/miss_fitter.h bins replayed steps (its bin edges), one column per H/K.
//
// What counters identify and what they cannot (written into every output):
//  * identified: the miss fraction pooled over every layer, request and phase, at the deployed H/K, along n/H
//    only as far as the mean context moved between intervals; with bytes and misses both exported, the bytes
//    per missed row;
//  * not identified: the first-step / warm-up / steady split (all phases are pooled: the YAML keeps the contract
//    value 1 for an empty start's first step and the pooled fraction as warm-up), the spread of n inside an
//    interval (a point is a mixture read at the mean n), other H/K (one deployment runs one; the planner reads
//    the column flat beyond it), per-layer differences, and the policy (whatever the engine runs, LRU in both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/miss/counters/prometheus_text.h"
#include "sim/miss/counters/sglang_log.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::sim::counters {

/// Counter deltas over one interval of one source.
struct CounterInterval {
  std::string file;
  int64_t line_from = 0, line_to = 0;
  std::optional<double> t0_s, t1_s;
  double hits = 0, misses = 0;
  std::optional<double> h2d_bytes;
  std::optional<double> seq_len;
  std::optional<int32_t> H, K;  // from labels / log fields; the options fill in what is missing
  // vLLM #56061's counters: hits and lookups per index group (label index_group; "" = unlabelled), misses =
  // lookups − hits; l3_lookups is read and reported, not fitted (the simulator has no third tier).
  std::string index_group;
  std::optional<double> lookups, l3_lookups;
  bool counter_reset = false;   // a counter went down (server restart): the delta is its new value
};

struct MetricsFitOptions {
  std::optional<int32_t> H, K;         // device_buffer_size and top_k the server ran with
  std::optional<double> seq_len;       // mean context when the inputs carry none
  std::string seq_len_metric;          // a Prometheus gauge holding the mean context of running requests
  std::optional<int64_t> row_bytes;    // bytes per row per layer: misses from H2D bytes; checked against both
  std::string model;                   // keep only series with model_name="<model>" ("" = sum every series)
  std::string policy = "sglang-lru";   // the surface's policy key (the engines' swap-in is LRU)
  std::string name = "production";
};

struct MetricsSource {
  std::string file, kind;  // kind: "prometheus" | "sglang-log"
  int64_t scrapes = 0;     // Prometheus scrapes, or log stats lines
  int64_t intervals = 0;
  std::optional<double> t_first_s, t_last_s;
};

struct FittedInterval {
  CounterInterval iv;
  int32_t H = 0, K = 0;
  double usable = 0, fraction = 0, n_over_h = 0;
  double bytes_per_miss = 0;  // 0 when not both exported
  std::string skipped;        // why it is not in the fit ("" = used)
};

struct MetricsFit {
  MissSurface surface;
  std::vector<MetricsSource> sources;
  std::vector<FittedInterval> intervals;
  std::vector<std::string> identified, not_identified;
};

/// Names accepted for each counter, first match wins (vLLM's exposition first, then the unprefixed forms).
const std::vector<std::string>& hits_metric_names();
const std::vector<std::string>& misses_metric_names();
const std::vector<std::string>& bytes_metric_names();
/// vLLM #56061 exports lookups (hits + misses) and l3_lookups instead of misses.
const std::vector<std::string>& lookups_metric_names();
const std::vector<std::string>& l3_lookups_metric_names();

/// Deltas between consecutive scrapes of one file, per (H, K) label group; `source` receives the file's counts.
std::vector<CounterInterval> intervals_from_prometheus(const PromDocument& doc, const MetricsFitOptions& options,
                                                       MetricsSource& source);
std::vector<CounterInterval> intervals_from_log(const std::vector<LogInterval>& lines, MetricsSource& source);

/// Reads every file (kind by content: a log holds a stats or decode line), fits. Throws naming file and line.
MetricsFit fit_from_metric_files(const std::vector<std::string>& files, const MetricsFitOptions& options);
MetricsFit fit_from_intervals(std::vector<CounterInterval> intervals, std::vector<MetricsSource> sources,
                              const MetricsFitOptions& options);

std::string metrics_fit_table(const MetricsFit& fit);
std::string metrics_fit_json(const MetricsFit& fit);
/// The miss-surface YAML (load_miss_surface reads it back) with the provenance and the caveats as comments.
std::string metrics_fit_yaml(const MetricsFit& fit, const std::string& command);

}  // namespace hisparse::sim::counters
