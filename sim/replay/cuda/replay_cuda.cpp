// @brief run_replay_cuda (see replay_cuda.h): the replay driver over the CUDA session.
#include "sim/replay/cuda/replay_cuda.h"

#include "sim/replay/cuda/swap_in_session_cuda.h"
#include "sim/replay/replay_driver.h"

namespace hisparse::sim {

namespace {
thread_local ReplayCudaTiming g_timing;
}  // namespace

ReplayCudaTiming last_replay_cuda_timing() { return g_timing; }

ReplayResult run_replay_cuda(traces::TraceSource& source, const ReplayOptions& options,
                             const std::function<void(const ReplayRequestRows&)>& row_sink,
                             const ReplayCudaOptions& cuda_options) {
  g_timing = ReplayCudaTiming{};
  ReplayDriverOptions d;
  d.open_trace = cuda_options.open_trace;
  d.max_rows = cuda_options.max_rows;
  const int32_t slots = cuda_options.slots;
  ReplayDriverTiming t;
  ReplayResult result = run_replay_session(
      source, options, row_sink, d,
      [slots](const SwapInSessionShape& shape) { return std::make_unique<CudaSwapInSession>(shape, slots); }, &t);
  g_timing = {t.backend_seconds, t.session_start_seconds, t.wait_seconds, t.lanes, t.slots};
  return result;
}

}  // namespace hisparse::sim
