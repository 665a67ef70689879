// @brief hisparse.replay: the CLI's library call (sim::run_replay_request) over a trace file or arrays, with the
// per-step rows kept as columns instead of streamed to a CSV.
#include <algorithm>
#include <memory>

#include "python/bindings/array_trace.h"
#include "python/bindings/facade.h"
#include "sim/api/replay_request.h"
#include "traces/trace_source.h"

namespace hisparse::python {

namespace {

/// The library's replay request of `args` on `trace` (a path, or a label when `open_trace` hands the arrays in).
ReplayOutput replay_request(const std::string& trace, int32_t top_k, const std::string& initial_state,
                            const ReplayArgs& args, sim::TraceOpener open_trace) {
  sim::ReplayRequest request;
  request.trace = trace;
  if (top_k > 0) request.top_k = top_k;
  request.initial_state = initial_state;
  request.policies = args.policies;
  request.buffer_sizes = args.buffer_sizes;
  request.row_bytes = args.row_bytes;
  request.row_bytes_given = true;
  request.threads = args.threads;  // 0: the hardware threads, as the CLI
  request.lookahead_mb = args.lookahead_mb;
  request.keep_step_rows = args.per_step;

  ReplayOutput out;
  std::vector<int32_t> sizes = args.buffer_sizes;
  std::sort(sizes.begin(), sizes.end());  // the library replays (and reports) them in ascending order
  for (const auto& p : args.policies) {
    for (int32_t h : sizes) {
      out.config_policy.push_back(p);
      out.config_buffer_size.push_back(h);
    }
  }
  sim::ReplayHooks hooks;
  hooks.open_trace = std::move(open_trace);
  // The order of sim::StepCsvWriter::write: per request, configuration, layer, step.
  hooks.rows = [&](const sim::ReplayRequestRows& rows) {
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
  const sim::ReplayOutcome outcome = sim::run_replay_request(request, hooks);
  out.json = outcome.json;
  out.csv = outcome.csv;
  out.seconds = outcome.result.seconds;
  out.entries = outcome.result.entries;
  out.threads = outcome.result.threads;
  return out;
}

}  // namespace

ReplayOutput replay_path(const std::string& path, int32_t top_k, const std::string& initial_state,
                         const ReplayArgs& args) {
  return replay_request(path, top_k, initial_state, args, nullptr);
}

ReplayOutput replay_arrays(const ArrayTrace& trace, const ReplayArgs& args) {
  check_array_trace(trace);
  return replay_request("topk arrays", 0, "", args,
                        [&trace]() -> std::unique_ptr<traces::TraceSource> {
                          return std::make_unique<ArrayTraceSource>(trace);
                        });
}

}  // namespace hisparse::python
