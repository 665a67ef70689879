// @brief The `type: agentic` workload YAML read into a conversation generator (agentic_generator.h): a step is a
// turn whose new message is a tool's output and whose think time is the tool's latency.
#include "sim/workload/agentic_generator.h"

namespace hisparse::sim {

ConversationSpec read_agentic_spec(StrictMap& root) {
  root.require("system_prompt_tokens");  // the shared prefix is what makes a trace agentic here
  return read_conversation_yaml(root, {"steps", "task_tokens", "tool_output_tokens", "action_tokens", "tool_latency"},
                                "agentic");
}

}  // namespace hisparse::sim
