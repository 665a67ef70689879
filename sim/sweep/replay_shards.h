// @brief Replaying a trace in request shards: a view of a trace holding a run of its requests, the shard bounds, and
// the exact merge of the shards' counters. Exact because the replay engine starts every request from a fresh policy
// state (sim/replay/replay_engine.cpp resets each (layer, configuration) at a request's first step) and every counter
// and histogram is an integer sum: the merged result equals one replay of the whole trace, field for field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/replay/replay_engine.h"
#include "traces/trace_source.h"

namespace hisparse::sim::sweep {

/// [first, first + count) request ranges (indexes into request_ids() order) of at most `per_shard` requests each.
std::vector<std::pair<int64_t, int64_t>> request_shards(int64_t requests, int64_t per_shard);

/// The requests [first, first + count) of `inner` in its request_ids() order (a run of consecutive requests).
std::unique_ptr<traces::TraceSource> request_range_source(std::unique_ptr<traces::TraceSource> inner, int64_t first,
                                                          int64_t count);

/// Adds `part` (a replay of other requests of the same trace with the same options) into `into`: counters,
/// histograms, requests, steps, entries, look-ahead cuts; step_seq_lens appended (shards in trace order keep it in
/// trace order). `into` starts as an empty result with the same configurations (or is the first part).
void merge_replay_result(ReplayResult& into, const ReplayResult& part);

/// The integer counters of `r` as text (what a worker hands back; step_seq_lens and timings are not carried).
std::string replay_counters_text(const ReplayResult& r);
/// Parses replay_counters_text(); throws hisparse::Error naming `where` on malformed text.
ReplayResult parse_replay_counters(const std::string& text, const std::string& where);

}  // namespace hisparse::sim::sweep
