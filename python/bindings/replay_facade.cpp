// @brief hisparse.replay: the CLI's replay path (run_replay, replay_json, replay_csv) over a trace file or arrays, with
// the per-step rows kept as columns instead of streamed to a CSV.
#include <algorithm>
#include <memory>
#include <thread>

#include "python/bindings/array_trace.h"
#include "python/bindings/facade.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "traces/trace_source.h"

namespace hisparse::python {

namespace {

ReplayOutput replay_source(traces::TraceSource& source, const ReplayArgs& args) {
  sim::ReplayOptions opt;
  opt.policies = args.policies;
  opt.buffer_sizes = args.buffer_sizes;
  // `hisparse replay --buffer-sizes` replays (and reports) the sizes in ascending order.
  std::sort(opt.buffer_sizes.begin(), opt.buffer_sizes.end());
  opt.row_bytes = args.row_bytes;
  opt.threads = args.threads > 0 ? args.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (args.lookahead_mb < 1 || args.lookahead_mb > (int64_t{1} << 30))
    throw std::invalid_argument("lookahead_mb " + std::to_string(args.lookahead_mb) + " must be in 1..2^30");
  opt.lookahead_bytes = static_cast<size_t>(args.lookahead_mb) << 20;
  opt.keep_step_rows = args.per_step;

  ReplayOutput out;
  for (const auto& p : opt.policies) {
    for (int32_t h : opt.buffer_sizes) {
      out.config_policy.push_back(p);
      out.config_buffer_size.push_back(h);
    }
  }
  // The order of sim::StepCsvWriter::write: per request, configuration, layer, step.
  auto sink = [&](const sim::ReplayRequestRows& rows) {
    for (size_t c = 0; c < rows.rows.size(); ++c) {
      for (size_t l = 0; l < rows.rows[c].size(); ++l) {
        const auto& v = rows.rows[c][l];
        for (size_t j = 0; j < v.size(); ++j) {
          const sim::ReplayStepRow& r = v[j];
          out.request.push_back(rows.request_id);
          out.config.push_back(static_cast<int32_t>(c));
          out.layer.push_back(static_cast<int32_t>(l));
          out.step.push_back(rows.steps[j]);
          out.seq_len.push_back(r.seq_len);
          out.selected.push_back(r.selected);
          out.hits.push_back(r.hits);
          out.newest_hits.push_back(r.newest_hits);
          out.misses.push_back(r.misses);
          out.h2d_bytes.push_back(static_cast<int64_t>(r.misses) * args.row_bytes);
        }
      }
    }
  };
  const sim::ReplayResult result = sim::run_replay(source, opt, sink);
  out.json = sim::replay_json(result, args.row_bytes, sim::no_deployment_recommendation_json());
  out.csv = sim::replay_csv(result);
  out.seconds = result.seconds;
  out.entries = result.entries;
  out.threads = result.threads;
  return out;
}

}  // namespace

ReplayOutput replay_path(const std::string& path, int32_t top_k, const std::string& initial_state,
                         const ReplayArgs& args) {
  traces::TraceOpenOptions options;
  if (top_k > 0) options.top_k = top_k;
  if (!initial_state.empty()) options.initial_state = traces::parse_initial_state(initial_state, "initial_state");
  auto source = traces::open_trace(path, options);
  return replay_source(*source, args);
}

ReplayOutput replay_arrays(const ArrayTrace& trace, const ReplayArgs& args) {
  check_array_trace(trace);
  ArrayTraceSource source(trace);
  return replay_source(source, args);
}

}  // namespace hisparse::python
