// @brief Multi-turn chat sessions (workload YAML `type: sessions`): users open conversations at Poisson times behind
// one system prompt, and each turn resends the whole conversation so far plus a new message, after a think time.
#pragma once

#include "core/yaml_reader.h"
#include "sim/workload/conversation_generator.h"

namespace hisparse::sim {

/// Reads a `type: sessions` workload YAML's keys (after `type`, `name`, `time_scale`, `max_requests`): seed, rate
/// (sessions per second), duration, block_tokens, system_prompt_tokens, max_context_tokens, and the distributions
/// (distribution.h) turns, first_message_tokens, user_message_tokens, output_tokens, think_time; then root.finish().
ConversationSpec read_session_spec(StrictMap& root);

}  // namespace hisparse::sim
