// @brief `hisparse replay --backend cuda`: the same replay as run_replay, through the same driver
// (sim/replay/replay_driver.h) over the CUDA session (swap_in_session_cuda.h): sglang-lru stepped by the project's
// swap-in kernels on the GPU (plan only, no KV copies). Requests run side by side in lanes (a lane = L batch rows, one
// per layer; a lane whose request ends takes the next request of the trace), one launch per buffer size and decode
// step, the states stay on the device, only counters come back.
//
// Pipelined (docs/replay.md, `--backend cuda`): the host threads (--threads) read the lanes' next step records in
// parallel straight into a pinned staging slot while the GPU uploads and runs the previous slots; counters come back
// asynchronously and are reduced in trace order by the CPU replay's own add_request_rows. Results are identical to
// the CPU replay (tests/cuda/test_replay_cuda.cpp compares every per-step count).
#pragma once

#include <functional>
#include <memory>

#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

struct ReplayCudaOptions {
  /// Opens another cursor on the same trace, so that a group of requests is read step by step side by side (memory:
  /// one step record per request in flight). Without it requests run one at a time (rows = layers).
  /// Called from several host threads at once (one cursor per lane).
  std::function<std::unique_ptr<traces::TraceSource>()> open_trace;
  int32_t max_rows = 8192;  // batch rows (lanes x layers) per launch
  int32_t slots = 3;        // steps in flight: pinned staging slots (1 = read, run, wait, in turn)
};

/// Throws hisparse::Error when no GPU is usable (naming why), for a policy other than sglang-lru (the kernels implement
/// that contract), on a bad record (the reader's message, or the CPU replay's for seq_len and width), or on a row the
/// kernel rejects (naming request, layer and step). options.threads host threads read the trace.
ReplayResult run_replay_cuda(traces::TraceSource& source, const ReplayOptions& options,
                             const std::function<void(const ReplayRequestRows&)>& row_sink = {},
                             const ReplayCudaOptions& cuda_options = {});

/// Where the last run_replay_cuda on this thread spent its time (measured), for the command's speed lines.
struct ReplayCudaTiming {
  double kernel_seconds = 0;        // the swap-in kernels (CUDA events around each step's launches), summed
  double device_start_seconds = 0;  // CUDA context, device buffers, pinned staging (overlaps the first reads)
  double host_wait_seconds = 0;     // host blocked waiting for a slot's counters (the GPU behind the host)
  int32_t lanes = 0;                // requests side by side (batch rows = lanes x layers)
  int32_t slots = 0;                // steps in flight
};
ReplayCudaTiming last_replay_cuda_timing();

}  // namespace hisparse::sim
