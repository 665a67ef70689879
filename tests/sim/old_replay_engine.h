// @brief The pre-issue-16 replay engine (see old_replay_engine.cpp), for differential tests only.
#pragma once

#include <functional>

#include "sim/replay/replay_engine.h"

namespace hisparse::sim::old {

/// run_replay as of commit cc913fa (batches per request, one task per layer running config -> step, every policy
/// through its cpu_ref object). Uses options.policies, buffer_sizes, row_bytes, threads, batch_bytes, keep_step_rows.
ReplayResult old_run_replay(traces::TraceSource& source, const ReplayOptions& options,
                            const std::function<void(const ReplayRequestRows&)>& row_sink = {});

}  // namespace hisparse::sim::old
