// @brief run_replay (see replay_engine.h): the options checked, then the one driver over the counting CPU session;
// and the result's arithmetic (rates, histograms, the reduction of a request's rows).
#include "sim/replay/replay_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "sim/replay/replay_driver.h"
#include "sim/replay/replay_v2_session.h"
#include "traces/trace_limits.h"

namespace hisparse::sim {

double ReplayConfigStats::hit_rate() const {
  // Nothing selected: 0 / 0 is undefined (NaN: "n/a" in the table, null in JSON), not a perfect 100 %.
  return selected ? static_cast<double>(selected - misses) / static_cast<double>(selected)
                  : std::numeric_limits<double>::quiet_NaN();
}
double ReplayConfigStats::mean_misses_per_step_layer() const {
  return step_layers ? static_cast<double>(misses) / static_cast<double>(step_layers) : 0.0;
}
double ReplayConfigStats::mean_misses_per_decode_step() const {
  return decode_steps ? static_cast<double>(misses) / static_cast<double>(decode_steps) : 0.0;
}
double ReplayConfigStats::fast_path_fraction() const {
  return step_layers ? static_cast<double>(fast_path_step_layers) / static_cast<double>(step_layers) : 0.0;
}

int64_t histogram_quantile(const std::vector<int64_t>& hist, double q) {
  int64_t total = 0;
  for (int64_t c : hist) total += c;
  if (total == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(total))));
  int64_t seen = 0;
  for (size_t v = 0; v < hist.size(); ++v) {
    seen += hist[v];
    if (seen >= rank) return static_cast<int64_t>(v);
  }
  return static_cast<int64_t>(hist.size()) - 1;
}

namespace {

/// The options' checks, in the words of the command's flags (the driver checks them again, for its other callers).
void check_options(const ReplayOptions& o, int32_t top_k) {
  if (o.policies.empty()) throw_error("replay: --policy names no policy");
  if (o.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  if (o.threads < 1) throw_error("replay: --threads {} must be >= 1", o.threads);
  if (o.row_bytes < 1) throw_error("replay: --row-bytes {} must be >= 1", o.row_bytes);
  for (int32_t H : o.buffer_sizes) {
    if (H < top_k) {
      throw_error("replay: buffer size {} (--buffer-sizes) is smaller than the trace's top_k {}; the swap-in "
                  "contract requires device_buffer_size >= top_k",
                  H, top_k);
    }
    // Each (layer, configuration) state holds O(H) slots: a buffer beyond the longest context is a typo.
    if (H > traces::kMaxSeqLen)
      throw_error("replay: buffer size {} (--buffer-sizes) is larger than the longest context a trace may hold ({})",
                  H, traces::kMaxSeqLen);
  }
  for (const auto& p : o.policies) {
    cpu_ref::make_policy(cpu_ref::with_v2_coordinator(p, o.v2_coordinator));  // rejects unknown names
    cpu_ref::check_policy_top_k(p, top_k);  // named as the user wrote it
  }
}

}  // namespace

bool cold_start_step(int64_t s, int32_t H, int32_t K) {
  // W = ceil(H / K), as warmup_steps_for (sim/miss/miss_surface.h, which builds on this folder: not included here).
  return s <= (K < 1 ? 0 : (static_cast<int64_t>(H) + K - 1) / K);
}

std::vector<int64_t> steady_histogram(const std::vector<int64_t>& hist, const std::vector<int64_t>& cold) {
  std::vector<int64_t> out = hist;
  for (size_t i = 0; i < cold.size() && i < out.size(); ++i) out[i] -= cold[i];
  return out;
}

void add_request_rows(ReplayResult& result, const ReplayRequestRows& rows, const std::vector<int32_t>& seq_lens,
                      int64_t row_bytes) {
  const size_t steps = rows.steps.size();
  const int64_t first = steps ? rows.steps.front() : 0;
  for (size_t c = 0; c < result.configs.size(); ++c) {
    auto& s = result.configs[c];
    s.cold_miss_hist.resize(s.miss_hist.size(), 0);
    s.cold_step_miss_hist.resize(s.step_miss_hist.size(), 0);
    const size_t L = rows.rows[c].size();
    for (size_t j = 0; j < steps; ++j) {
      const bool cold = cold_start_step(rows.steps[j] - first, s.buffer_size, result.meta.top_k);
      int64_t m = 0;
      for (size_t l = 0; l < L; ++l) {
        const ReplayStepRow& row = rows.rows[c][l][j];
        s.selected += row.selected;
        s.hits += row.hits;
        s.newest_hits += row.newest_hits;
        s.misses += row.misses;
        s.fast_path_step_layers += row.seq_len <= s.buffer_size;
        s.miss_hist[static_cast<size_t>(row.misses)] += 1;
        if (cold) s.cold_miss_hist[static_cast<size_t>(row.misses)] += 1;
        result.entries += row.selected;
        m += row.misses;
      }
      s.step_layers += static_cast<int64_t>(L);
      s.step_miss_hist[static_cast<size_t>(m)] += 1;
      if (cold) s.cold_step_miss_hist[static_cast<size_t>(m)] += 1;
      s.step_misses.push_back(static_cast<int32_t>(m));
      s.decode_steps += 1;
    }
    s.h2d_bytes = s.misses * row_bytes;
  }
  result.decode_steps += static_cast<int64_t>(steps);
  result.step_seq_lens.insert(result.step_seq_lens.end(), seq_lens.begin(), seq_lens.end());
  for (int64_t step : rows.steps) result.step_index.push_back(static_cast<int32_t>(step - first));
  result.requests += 1;
}

ReplayResult run_replay(traces::TraceSource& source, const ReplayOptions& options,
                        const std::function<void(const ReplayRequestRows&)>& row_sink) {
  const traces::TraceMeta& meta = source.meta();
  if (meta.layers < 1 || meta.top_k < 1)
    throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, meta.layers, meta.top_k);
  check_options(options, meta.top_k);
  if (options.v2_pools && options.v2_schedules.empty()) {  // the V2 session over the whole trace first
    const ReplayOptions with = with_v2_schedules(options, meta);
    return run_replay(source, with, row_sink);
  }
  return run_replay_cpu_session(source, options, row_sink, options.open_trace);
}

}  // namespace hisparse::sim
