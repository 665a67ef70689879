// @brief `hisparse replay --scenario S` as two library calls around the replay (sim/api/replay_request.h): before it,
// the deployment's checks on the trace and the row bytes the replay takes from the model (plan_replay_advice); after
// it, the modelled step time of every replayed step and the advice over the replayed sizes (advise_replay), which
// completes the replay's outcome (replay.json's "recommendation" and "step_time"). The CLI makes both calls; a library
// caller (Python) may too, on a trace file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sim/api/replay_request.h"
#include "sim/api/requests.h"

namespace hisparse::sim {

/// What the replay takes from the deployment, and what the advice will check against.
struct ReplayAdvicePlan {
  int64_t row_bytes = 0;     // the model's latent row in the deployment's kv_dtype, or the replay's own when given
  int32_t scenario_top_k = 0;
  std::string warning;       // a trace of another model's depth ("" when it matches), to print before the replay
};

/// Checks `advice` (its setup.scenario names the deployment; its overrides, miss model, cost terms, seq_lens,
/// workload, mix classes and ratios are read; trace, policy, buffer sizes and threads come from the replay) against
/// the trace `replay` will read: a model with a sparse indexer, the trace's top_k (unless
/// misses.rescale_trace_top_k), no pages. Throws hisparse::Error in replay's words ("replay: --scenario S: ...").
ReplayAdvicePlan plan_replay_advice(const ReplayRequest& replay, const AdviseRequest& advice);

/// The advice's stages: its set-up (miss model from the replay), the advice per context mix, the step times.
constexpr int64_t kReplayAdviceStages = 3;

struct ReplayAdviceHooks {
  std::function<void(const std::string&)> print;                  // each piece of the text as it is produced
  std::function<void(int64_t done, int64_t total)> stage_done;    // stages done of kReplayAdviceStages
};

/// After `outcome = run_replay_request(replay)`: the step time of every replayed step on the deployment and the
/// advice for the trace's own context mix (or advice.seq_lens / workload), with this replay as the miss model over
/// the replayed sizes. Fills outcome's step_time_text, step_time_json and recommendation_json, rewrites its json, and
/// returns the text printed after the replay's (also appended to outcome.text).
std::string advise_replay(const ReplayRequest& replay, ReplayOutcome& outcome, const AdviseRequest& advice,
                          const ReplayAdviceHooks& hooks = {});

}  // namespace hisparse::sim
