// @brief The replay's V2 session (docs/swap_in.md, "Admission over a trace"): the trace's requests run through SGLang's
// V2 coordinator as one batch (cpu_ref/memory/hisparse_v2_session.h) before the replay, one schedule per hisparse-v2
// policy and buffer size, which the policies then follow step by step; and the counts the replay prints.
#pragma once

#include <string>

#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

/// `options` with v2_schedules filled from options.v2_pools: each request's first sequence length and step count are
/// read through options.open_trace (a second cursor; throws hisparse::Error without one, or without a hisparse-v2
/// policy to schedule).
ReplayOptions with_v2_schedules(const ReplayOptions& options, const traces::TraceMeta& meta);

/// One line per schedule: admissions as V2, fallbacks by reason, retractions and re-admissions, and the share of the
/// admitted prefixes on the host at their last steps ("" without a session).
std::string format_v2_session(const ReplayOptions& options);

}  // namespace hisparse::sim
