// @brief The plainest replay (every request, layer and configuration on its own state: sglang-lru through
// cpu_ref::swap_in with the preload rule written out, the other policies through their cpu_ref/policies objects, an
// offline one with the request's whole future), which the replay driver's tests hold every arrangement against
// (tests/sim/replay/test_replay_differential.cpp, test_replay_driver.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/replay/replay_engine.h"
#include "traces/trace_source.h"

namespace hisparse::replay_test {

/// A replay's result and every request's rows (in the order the row sink saw them).
struct ReplayRun {
  sim::ReplayResult result;
  std::vector<sim::ReplayRequestRows> rows;
};

/// The reference replay of `recs` (requests are consecutive records of one id).
ReplayRun plain_replay(const traces::TraceMeta& meta, const std::vector<traces::StepRecord>& recs,
                       const std::vector<std::string>& policies, const std::vector<int32_t>& sizes, int64_t row_bytes);

}  // namespace hisparse::replay_test
