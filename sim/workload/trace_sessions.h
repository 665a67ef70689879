// @brief Sessions recovered from a trace's prefix block chains (Mooncake's conversation trace names no conversation,
// but a turn's hash_ids repeat the previous turn's): which request continues which, as session id and turn.
#pragma once

#include <cstdint>

#include "sim/workload/workload.h"

namespace hisparse::sim {

struct TraceSessions {
  int64_t sessions = 0;       // conversations found (a request that continues none opens one)
  int64_t continuations = 0;  // requests that continue an earlier one (turn > 0)
  int64_t common_blocks = 0;  // leading blocks every request shares (a system prompt: 1 in Mooncake's trace)
  int64_t answers_keyed = 0;  // requests whose answer a later turn's blocks name (RequestSpec::sequence_blocks)
};

/// In arrival order, request r continues the latest earlier request that held r's longest block prefix seen so far,
/// when that prefix is longer than the blocks every request shares (those say nothing about a conversation); r then
/// takes that request's session and the session's next turn number (turns stay 0, 1, 2, … even where a user edited
/// an earlier message and the prompt branches). think_time stays 0 and arrival the time stamp: the engine releases a
/// turn at max(time stamp, the previous turn's finish). Every request must name its blocks, else an error.
/// scripts/mooncake_sessions.py applies the same rule independently. A request continued by a later one that resends
/// its whole prompt gets sequence_blocks: that request's blocks up to the end of its prompt + answer (assumed: the
/// client resends the answer verbatim, as chat clients do), so the prefix cache keys the answer at its finish.
TraceSessions derive_sessions(Workload& w);

}  // namespace hisparse::sim
