// @brief Agentic traces (workload YAML `type: agentic`): agent runs start at Poisson times, every run's prompt opens
// with the same long system prompt and tool definitions, and each step appends the model's action and the tool's
// output, after the tool's latency, over many steps.
#pragma once

#include "core/yaml_reader.h"
#include "sim/workload/conversation_generator.h"

namespace hisparse::sim {

/// Reads a `type: agentic` workload YAML's keys (after `type`, `name`, `time_scale`, `max_requests`): seed, rate
/// (runs per second), duration, block_tokens, system_prompt_tokens (system prompt + tool definitions, required),
/// max_context_tokens, and the distributions (distribution.h) steps, task_tokens, action_tokens (each step's
/// output), tool_output_tokens, tool_latency; then root.finish().
ConversationSpec read_agentic_spec(StrictMap& root);

}  // namespace hisparse::sim
