// @brief Shared body of the trace-reader fuzz targets: read everything, list and seek; only Error may escape. Inputs
// are read from memory (open_trace_memory, open_npy_trace_memory): no scratch file per input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "traces/trace_source.h"

namespace hisparse::fuzz {

/// Exercises every entry point of a reader that `open` returns. A hisparse::Error is the expected answer to bad
/// input; anything else (another exception, a sanitizer report, a timeout) is a finding.
template <class Open>
void exercise(Open&& open) {
  try {
    std::unique_ptr<traces::TraceSource> src = open();
    traces::StepRecord rec;
    int64_t guard = 0;
    while (src->next(rec) && ++guard < 100000) {
    }
    const auto ids = src->request_ids();
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
      src->seek_request(*it);
      src->next(rec);
    }
  } catch (const Error&) {
  }
}

}  // namespace hisparse::fuzz
