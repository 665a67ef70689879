// @brief The per-layer statistics `hisparse trace info` prints: overlap, reuse distances, working set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace_source.h"

namespace hisparse::traces {

struct TraceStatsOptions {
  int32_t window = 32;  // steps over which the working set (distinct positions) is counted
};

/// Reuse distance d of an entry = steps since the same layer of the same request last selected that position.
/// Buckets: d = 1, 2, 3-4, 5-8, ..., 129-256, > 256; first uses are counted apart.
inline constexpr int kReuseBuckets = 10;
std::string reuse_bucket_label(int bucket);

struct LayerStats {
  int64_t steps = 0;           // step records
  int64_t selected = 0;        // valid entries
  int64_t overlap_steps = 0;   // steps with a previous step in the same request
  double overlap_sum = 0;      // sum over those of |S_t ∩ S_t-1| / |S_t|
  int64_t reuse[kReuseBuckets] = {};
  int64_t first_use = 0;
  int64_t ws_steps = 0;        // steps at which the working set was sampled
  double ws_sum = 0;
  int64_t ws_max = 0;          // distinct positions over the last `window` steps, largest seen
  double overlap() const { return overlap_steps ? overlap_sum / static_cast<double>(overlap_steps) : 0.0; }
  double ws_mean() const { return ws_steps ? ws_sum / static_cast<double>(ws_steps) : 0.0; }
};

struct TraceStats {
  TraceMeta meta;
  TraceStatsOptions options;
  int64_t requests = 0;
  int64_t steps = 0;           // (request, step) records
  std::vector<LayerStats> layers;
  LayerStats total() const;    // all layers pooled (overlap and working set averaged, max of maxima)
};

/// One pass over `src` from its current position. Memory: per layer `window` step sets plus one entry per
/// distinct position of the current request.
TraceStats compute_trace_stats(TraceSource& src, const TraceStatsOptions& options = {});

std::string format_stats_table(const TraceStats& stats);
std::string format_stats_json(const TraceStats& stats);

}  // namespace hisparse::traces
