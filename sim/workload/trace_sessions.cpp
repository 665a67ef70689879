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
      r.session_id = w.requests[static_cast<size_t>(latest[static_cast<size_t>(node)])].session_id;
      ++out.continuations;
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
