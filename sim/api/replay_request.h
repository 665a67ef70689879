// @brief `hisparse replay` as a library call: ReplayRequest (the trace and its overrides, the policies and buffer
// sizes, pages, the per-step rows) → ReplayOutcome (the result, the text the CLI prints, replay.json / replay.csv).
// The CLI and the Python module both build one and call run_replay_request. With a deployment, the advice is a second
// call on the outcome (sim/api/replay_advice.h), which the CLI makes after this one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/requests.h"
#include "sim/replay/replay_engine.h"
#include "traces/trace_source.h"

namespace hisparse::sim {

using ReplayRowSink = std::function<void(const ReplayRequestRows&)>;
using TraceOpener = std::function<std::unique_ptr<traces::TraceSource>()>;

/// What the caller plugs in. The CUDA replay lives in a target that links the kernels (sim/replay/cuda), which this
/// library does not, so the caller hands it in.
struct ReplayHooks {
  /// run_replay_cuda, bound by the caller; `open_trace` opens another cursor on the same (paged) trace.
  std::function<ReplayResult(traces::TraceSource&, const ReplayOptions&, const ReplayRowSink&, const TraceOpener&)>
      cuda;
  /// The trace when it is not a file (the Python module's arrays); request.trace, initial_state and top_k are then
  /// not read to open it. Called once per cursor, possibly from several threads.
  TraceOpener open_trace;
  /// Once the request is checked, before the per-step CSV is opened and the replay runs (the CLI creates its --out
  /// directory there: the CSV may go into it, and a refused request leaves no directory behind).
  std::function<void()> checked;
  std::function<void(const ReplayProgress&)> progress;  // after every batch of requests (main thread)
  ReplayRowSink rows;                                   // the per-step rows, when kept (before the CSV gets them)
  /// Each piece of ReplayOutcome::text as it is produced (the CLI prints the page note before the replay runs).
  std::function<void(const std::string&)> print;
};

struct ReplayOutcome {
  ReplayResult result;
  int64_t row_bytes = 0;            // the row bytes used: the model's with a scenario, × page_size in pages
  std::string page_note;            // "page replay: …" line, "" in tokens
  std::string recommendation_json;  // replay.json's "recommendation" (none without the advice)
  std::string step_time_json;       // replay.json's "step_time" ("" without the advice)
  std::string step_time_text;       // the modelled step-time lines ("" without the advice)
  std::string text;                 // the replay's report (the advice's text appended by advise_replay)
  std::string json;                 // replay.json
  std::string csv;                  // replay.csv
};

/// The whole replay: checks (errors say "replay: --flag value …" as the CLI's), opening the trace with its
/// overrides, pages, the replay on `request.backend`, the per-step CSV, the table, and replay.json without a
/// recommendation (advise_replay adds one).
ReplayOutcome run_replay_request(const ReplayRequest& request, const ReplayHooks& hooks = {});

/// The overrides the trace is opened with (--initial-state, --top-k), checked.
traces::TraceOpenOptions replay_trace_open_options(const ReplayRequest& request);

/// What the CLI prints after a replay without a deployment: why no buffer size is recommended.
std::string no_recommendation_text(const std::string& trace);

}  // namespace hisparse::sim
