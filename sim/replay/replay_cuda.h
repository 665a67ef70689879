// @brief `hisparse replay --backend cuda`: the same replay as run_replay, with sglang-lru stepped by the project's
// swap-in kernels on the GPU (plan only, no KV copies): every (request, layer) of a group of requests is one batch row,
// one launch per buffer size and decode step, the states stay on the device, only counters come back.
// Results are identical to the CPU replay (tests/cuda/test_replay_cuda.cpp compares per-step counts).
#pragma once

#include <functional>
#include <memory>

#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

struct ReplayCudaOptions {
  /// Opens another cursor on the same trace, so that a group of requests is read step by step side by side (memory:
  /// one step record per request in flight). Without it requests run one at a time (rows = layers).
  std::function<std::unique_ptr<traces::TraceSource>()> open_trace;
  int32_t max_rows = 8192;  // batch rows (requests x layers) per launch
};

/// Throws hisparse::Error when no GPU is usable (naming why), for a policy other than sglang-lru (the kernels implement
/// that contract), or on a row the kernel rejects (naming request, layer and step).
ReplayResult run_replay_cuda(traces::TraceSource& source, const ReplayOptions& options,
                             const std::function<void(const ReplayRequestRows&)>& row_sink = {},
                             const ReplayCudaOptions& cuda_options = {});

/// Seconds the swap-in kernels of the last run_replay_cuda on this thread ran (CUDA events), for the speed line.
double last_replay_cuda_kernel_seconds();

}  // namespace hisparse::sim
