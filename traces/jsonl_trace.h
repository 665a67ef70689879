// @brief JSON-lines traces as DeepSeek-V3.2 inference hooks dump them, one record per (request, step, layer).
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Lines `{"request_id", "step_idx", "layer_id", "seq_len", "selected_token_pos": [...]}` in any order. One pass
/// indexes the file (a few bytes per line); next() then reads one step's lines. Requests come in order of first
/// appearance, steps by ascending step_idx (renumbered 0, 1, ...). layers = 1 + the largest layer_id; top_k = the
/// longest list unless overridden.
std::unique_ptr<TraceSource> open_jsonl_trace(const std::string& path, const TraceOpenOptions& options);
/// The same over any seekable stream (open_trace_memory); `name` stands for the path in messages.
std::unique_ptr<TraceSource> open_jsonl_trace(std::unique_ptr<std::istream> in, const std::string& name,
                                              const TraceOpenOptions& options);

}  // namespace hisparse::traces
