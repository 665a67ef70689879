// @brief Workload: the requests a serving simulation receives (arrival, prompt and output length), read from
// the real Mooncake/Azure traces or made by a seeded generator, as a workload YAML (scenarios/workloads/) says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

struct RequestSpec {
  int64_t id = 0;             // index in arrival order
  SimTime arrival = 0;        // ns from the workload's start
  int32_t input_tokens = 0;   // prompt length
  int32_t output_tokens = 0;  // tokens generated (the first by prefill, the rest by decode)
  // The prompt's prefix blocks, as Mooncake's `hash_ids` name them: block b holds tokens [b × block, (b + 1) × block)
  // of the prompt (the last one the rest), and two requests share an id only where their prompts agree up to the end
  // of that block. Empty: the workload does not say (no prefix can be shared).
  std::vector<uint64_t> prefix_blocks = {};
  // The blocks of the prompt and its answer together (prompt + output tokens; the prompt's full blocks first), where
  // the workload knows how a later prompt continues this one (a session's next turn resends the answer): SGLang's
  // cache_finished_req inserts the answer's KV as well, so a later turn can hit it. Empty: only the prompt is keyed.
  std::vector<uint64_t> sequence_blocks = {};
  // Multi-turn sessions (closed loop, as a user waits for the answer before typing the next turn): requests of one
  // conversation share `session_id` (-1: not part of a session) and number their turns from 0; turn t > 0 is released
  // at max(arrival, the finish of turn t - 1 + think_time), so its arrival is a lower bound, not a time stamp.
  int64_t session_id = -1;
  int32_t turn = 0;
  SimTime think_time = 0;  // ns between the previous turn's last token and this turn's arrival
};

struct Workload {
  std::string name;
  std::string source;                 // file it came from (for messages and reports)
  std::vector<RequestSpec> requests;  // sorted by arrival (stable: file order breaks ties)
  int32_t block_tokens = 0;           // tokens per prefix block (Mooncake: 512); 0 when no request names its blocks
};

/// Mooncake JSON lines: {"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [...]} (hash_ids optional:
/// ids of the prompt's 512-token prefix blocks, ceil(n / 512) of them, kvcache-ai/Mooncake FAST25-release/traces).
Workload read_mooncake_trace(const std::string& path);
/// Azure LLM inference CSV: TIMESTAMP (yyyy-mm-dd hh:mm:ss.fffffff), ContextTokens, GeneratedTokens.
Workload read_azure_trace(const std::string& path);

/// Seeded synthetic workload: Poisson arrivals, log-uniform prompt and output lengths.
struct GeneratorSpec {
  uint64_t seed = 1;
  double rate_per_s = 1.0;
  SimTime duration = 60 * kNsPerSecond;
  int32_t input_min = 1024, input_max = 32768;
  int32_t output_min = 64, output_max = 1024;
};
Workload generate_workload(const GeneratorSpec& spec);

/// Loads a workload: a name (scenarios/workloads/<name>.yaml in the scenario dirs), a workload YAML path, or a
/// trace file (.jsonl = Mooncake, .csv = Azure). YAML keys: type (mooncake|azure|generator|sessions|agentic), file,
/// data_dir (relative to the YAML; $HISPARSE_DATA_DIR overrides), derive_sessions (mooncake: trace_sessions.h),
/// time_scale (arrivals and think times), max_requests, and the generators' keys (session_generator.h,
/// agentic_generator.h).
Workload load_workload(const std::string& name_or_path);

/// Keeps requests arriving before `until` (ns); the rest are dropped.
void truncate_workload(Workload& w, SimTime until);

}  // namespace hisparse::sim
