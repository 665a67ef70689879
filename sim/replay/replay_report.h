// @brief What `hisparse replay` prints and writes: the table of miss curves, replay.json, replay.csv and the per-step
// CSV. The buffer-size recommendation is not made here: it needs a deployment (apps/replay.cpp hands the replayed
// curves to the advisor, sim/advise/).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/atomic_output.h"
#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

/// The policy advice is given for: sglang-lru if replayed (it is what SGLang runs), else the first replayed.
std::string recommended_policy(const ReplayResult& r);

/// Human-readable table of every (policy, buffer size); H2D bytes use `row_bytes` per missed row.
std::string format_replay_table(const ReplayResult& r, int64_t row_bytes);

/// The offline policies' look-ahead: window length, peak memory, requests longer than it (one or two lines).
std::string format_lookahead(const ReplayResult& r);

/// The speed line: entries replayed (selected entries x configurations), the whole command's seconds and rate, and
/// the share spent reading the trace; `command_seconds` is measured by the caller around everything it did.
std::string format_replay_speed(const ReplayResult& r, double command_seconds);

/// replay.json / replay.csv contents (deterministic: no timings, no thread count). `recommendation_json` is the
/// value of the "recommendation" key: an advice object when a deployment was given, else an object saying why
/// there is none.
/// `step_time_json`, when not empty, is the value of a "step_time" key (replay --scenario: the modelled step time,
/// sim/replay/replay_step_time.h) placed before "recommendation"; without it the file is as before that key existed.
std::string replay_json(const ReplayResult& r, int64_t row_bytes, const std::string& recommendation_json,
                        const std::string& step_time_json = "");
/// The "recommendation" value when no deployment was given (replay alone recommends no buffer size); shared by the
/// CLI and the Python module so both write the same replay.json.
std::string no_deployment_recommendation_json();
std::string replay_csv(const ReplayResult& r);

/// Streams the per-step CSV to "<path>.tmp"; finish() renames it to `path`.
class StepCsvWriter {
 public:
  explicit StepCsvWriter(std::string path);
  /// Rows in the order (policy, buffer size, layer, step) within each request; requests in trace order.
  void write(const ReplayRequestRows& rows, const std::vector<ReplayConfigStats>& configs, int64_t row_bytes);
  void finish();

 private:
  AtomicOutput out_;  // "<path>.tmp.<pid>" until finish(); removed on an error or a signal
};

}  // namespace hisparse::sim
