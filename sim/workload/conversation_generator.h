// @brief The seeded generator of conversations whose prompts grow turn by turn (chat sessions, agent runs): each
// turn's prompt is the previous prompt, the previous answer and a new message, so its prefix blocks repeat the
// previous turn's where they agree; a shared system prompt opens every conversation with the same blocks.
#pragma once

#include <cstdint>

#include "core/yaml_reader.h"
#include "sim/engine/sim_time.h"
#include "sim/workload/distribution.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

struct ConversationSpec {
  std::string kind = "sessions";  // for messages and the workload's source: "sessions" or "agentic"
  uint64_t seed = 1;
  double rate_per_s = 1.0;                  // conversations starting per second (Poisson)
  SimTime duration = 600 * kNsPerSecond;    // conversations start in [0, duration)
  int32_t block_tokens = 512;               // tokens per prefix block (Mooncake's)
  int32_t shared_prefix_tokens = 0;         // the system prompt every conversation opens with (same blocks in all)
  int64_t max_context_tokens = 0;           // a conversation ends before a turn whose prompt + output would pass it; 0: none
  Distribution turns = Distribution::fixed(1);            // turns (steps) per conversation, >= 1
  Distribution first_tokens = Distribution::fixed(1000);  // turn 0's own message, after the shared prefix
  Distribution appended_tokens = Distribution::fixed(100);  // turn t > 0's new message (a user's, a tool's output)
  Distribution output_tokens = Distribution::fixed(300);  // each turn's answer (the model's action)
  Distribution think_time = Distribution::fixed(0);       // ns from a turn's answer to the next turn's message
};

/// Turn 0 of conversation c arrives at its Poisson start; its prompt is shared_prefix + first message. Turn t > 0:
/// prompt = prompt(t - 1) + output(t - 1) + appended message; think_time drawn; arrival = arrival(t - 1) + think_time
/// (a lower bound: RequestSpec's engine releases it at max(arrival, finish(t - 1) + think_time)). Block ids: turn 0
/// extends the shared prefix's (agreeing on shared_prefix_tokens), turn t extends turn t - 1's (agreeing on all of
/// prompt(t - 1)), so the partial last block of each is not shared (prefix_blocks.h). Conversation c is session c.
Workload generate_conversations(const ConversationSpec& spec);

/// What a workload YAML calls the five distributions (chat: turns, first_message_tokens, …; agentic: steps, …).
struct ConversationKeys {
  const char* turns;
  const char* first;
  const char* appended;
  const char* output;
  const char* think;
};

/// Reads a conversation workload YAML's root (after `type`, `name`, `time_scale`, `max_requests`): seed, rate,
/// duration, block_tokens, system_prompt_tokens, max_context_tokens, the five distributions under `keys` (all
/// required; distribution.h), then root.finish().
ConversationSpec read_conversation_yaml(StrictMap& root, const ConversationKeys& keys, const std::string& kind);

}  // namespace hisparse::sim
