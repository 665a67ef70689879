// @brief The `type: sessions` workload YAML read into a conversation generator (session_generator.h).
#include "sim/workload/session_generator.h"

namespace hisparse::sim {

ConversationSpec read_session_spec(StrictMap& root) {
  return read_conversation_yaml(
      root, {"turns", "first_message_tokens", "user_message_tokens", "output_tokens", "think_time"}, "sessions");
}

}  // namespace hisparse::sim
