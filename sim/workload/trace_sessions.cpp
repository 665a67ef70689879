// @brief Sessions from prefix block chains (trace_sessions.h): a trie of block sequences, each node remembering the
// latest request that passed through it.
#include "sim/workload/trace_sessions.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"

namespace hisparse::sim {
namespace {

int64_t common_prefix_blocks(const Workload& w) {
  const std::vector<uint64_t>& first = w.requests.front().prefix_blocks;
  size_t common = first.size();
  for (const RequestSpec& r : w.requests) {
    size_t c = 0;
    while (c < std::min(common, r.prefix_blocks.size()) && r.prefix_blocks[c] == first[c]) ++c;
    common = c;
  }
  return static_cast<int64_t>(common);
}

/// `parent`'s answer keyed by the blocks of `child`, which resends `parent`'s whole prompt (its full blocks matched
/// `depth` deep): assumed, as a chat client resends the conversation, the child's next blocks up to the end of the
/// parent's prompt + answer are the parent's sequence (RequestSpec::sequence_blocks). The first continuation keys it.
void key_answer(RequestSpec& parent, const RequestSpec& child, int64_t depth, int32_t block_tokens, TraceSessions& out) {
  if (!parent.sequence_blocks.empty() || block_tokens < 1 || depth < parent.input_tokens / block_tokens) return;
  const int64_t sequence = int64_t{parent.input_tokens} + parent.output_tokens;
  const auto n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(child.prefix_blocks.size()),
                                                       (sequence + block_tokens - 1) / block_tokens));
  if (n <= parent.prefix_blocks.size()) return;  // the child goes no further than the parent's prompt
  parent.sequence_blocks.assign(child.prefix_blocks.begin(), child.prefix_blocks.begin() + static_cast<std::ptrdiff_t>(n));
  ++out.answers_keyed;
}

}  // namespace

TraceSessions derive_sessions(Workload& w) {
  TraceSessions out;
  if (w.requests.empty()) return out;
  for (const RequestSpec& r : w.requests)
    if (r.prefix_blocks.empty())
      throw_error("workload {}: request {} names no prefix blocks (hash_ids), so sessions cannot be derived", w.source,
                  r.id);
  out.common_blocks = common_prefix_blocks(w);
  std::map<std::pair<int64_t, uint64_t>, int64_t> child;  // (node, block id) → node; node 0 is the empty prefix
  std::vector<int64_t> latest = {-1};                     // node → index of the latest request through it
  std::vector<int32_t> turns_of;                          // session → turns so far
  for (size_t i = 0; i < w.requests.size(); ++i) {
    RequestSpec& r = w.requests[i];
    int64_t node = 0, depth = 0;
    for (uint64_t b : r.prefix_blocks) {
      const auto it = child.find({node, b});
      if (it == child.end()) break;
      node = it->second;
      ++depth;
    }
    if (depth > out.common_blocks) {
      RequestSpec& parent = w.requests[static_cast<size_t>(latest[static_cast<size_t>(node)])];
      r.session_id = parent.session_id;
      ++out.continuations;
      key_answer(parent, r, depth, w.block_tokens, out);
    } else {
      r.session_id = static_cast<int64_t>(turns_of.size());
      turns_of.push_back(0);
    }
    r.turn = turns_of[static_cast<size_t>(r.session_id)]++;
    r.think_time = 0;
    node = 0;
    for (uint64_t b : r.prefix_blocks) {
      auto [it, added] = child.try_emplace({node, b}, static_cast<int64_t>(latest.size()));
      if (added) latest.push_back(-1);
      node = it->second;
      latest[static_cast<size_t>(node)] = static_cast<int64_t>(i);
    }
  }
  out.sessions = static_cast<int64_t>(turns_of.size());
  return out;
}

}  // namespace hisparse::sim
