// @brief The `.npy` directory trace: req_<id>_topk.npy [steps, layers, K] + req_<id>_seq_lens.npy [steps].
#pragma once

#include <memory>
#include <string>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Reads a directory of per-request `.npy` pairs (+ optional meta.json), one step at a time.
std::unique_ptr<TraceSource> open_npy_trace(const std::string& dir, const TraceOpenOptions& options);

}  // namespace hisparse::traces
