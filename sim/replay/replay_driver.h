// @brief The replay driver over a SwapInSession (core/swap_in_session.h): reads a trace, runs its requests side by
// side in lanes (a lane = L batch rows, one per layer; a lane whose request ends takes the next request of the
// trace), stages each step into the session's next slot and submits it without waiting, and reduces the counters
// that come back a ring's length later into a ReplayResult, request by request in trace order (add_request_rows).
// Which backend stepped the rows (cpu_ref's CpuSwapInSession, the CUDA kernels' session in sim/replay/cuda/) is the
// factory's business: the result is the same, bit for bit (tests/sim/replay/test_replay_driver.cpp,
// tests/cuda/test_replay_cuda.cpp).
//
// Pipelined (docs/replay.md): the session comes up (the factory runs on its own thread) while the host threads
// (ReplayOptions::threads) open the lanes' cursors and read their first steps; then each step's records are read in
// parallel straight into the slot being staged while the session runs the previous slots.
//
// Per step, in order: the running lanes read their request's next step; per-request admission (idle lanes take the
// next requests of the trace); the look-ahead stage (offline policies: a request read ahead in windows,
// sim/replay/replay_lookahead.h, each window's futures staged with its first step; one request at a time, so that
// --lookahead-mb bounds what is held); staging; submit; counters read back and reduced in trace order.
#pragma once

#include <functional>
#include <memory>

#include "core/swap_in_session.h"
#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

/// Builds the session for a shape (called once, on a thread of its own).
using SwapInSessionFactory = std::function<std::unique_ptr<SwapInSession>(const SwapInSessionShape&)>;

struct ReplayDriverOptions {
  /// Opens another cursor on the same trace, so that a group of requests is read step by step side by side (memory:
  /// one step record per request in flight). Without it requests run one at a time (rows = layers).
  /// Called from several host threads at once (one cursor per lane).
  std::function<std::unique_ptr<traces::TraceSource>()> open_trace;
  int32_t max_rows = 8192;  // batch rows (lanes x layers) per step
};

/// Where the last run_replay_session on this thread spent its time (measured), for the command's speed lines.
struct ReplayDriverTiming {
  double session_start_seconds = 0;  // the factory: device context, buffers, pinned staging (overlaps first reads)
  double wait_seconds = 0;           // host blocked in the session's wait (the backend behind the host)
  double backend_seconds = 0;        // the session's own measure of its stepping (SwapInSession::backend_seconds)
  int32_t lanes = 0;                 // requests side by side (batch rows = lanes x layers)
  int32_t slots = 0;                 // steps in flight
};

/// Replays `source` through the sessions `factory` builds (one configuration per (policy, buffer size) of `options`,
/// policy-major). Throws hisparse::Error on bad options, on a bad record (the CPU engine's message for seq_len and
/// width) and on a row the session rejects. `timing`, when given, receives where the time went.
ReplayResult run_replay_session(traces::TraceSource& source, const ReplayOptions& options,
                                const std::function<void(const ReplayRequestRows&)>& row_sink,
                                const ReplayDriverOptions& driver_options, const SwapInSessionFactory& factory,
                                ReplayDriverTiming* timing = nullptr);

/// The driver over the CPU's fast session (sim/replay/replay_cpu_session.h): as many lanes as it takes to give every
/// host thread a row (one lane = L rows; more lanes need `open_trace`), and as many steps per slot as fit
/// options.batch_bytes of lists (>= 1), so that a row's states stay in cache across its steps. Every policy: offline
/// ones through the look-ahead stage; options.reference_lru runs sglang-lru through its policy object.
ReplayResult run_replay_cpu_session(traces::TraceSource& source, const ReplayOptions& options,
                                    const std::function<void(const ReplayRequestRows&)>& row_sink,
                                    const std::function<std::unique_ptr<traces::TraceSource>()>& open_trace = {});

}  // namespace hisparse::sim
