// @brief The native trace format (traces/FORMAT.md): delta-coded, zstd-compressed, checksummed, indexed.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Streams a native trace: one chunk and one sorted set per layer in memory; seeks through the request index.
std::unique_ptr<TraceSource> open_native_trace(const std::string& path, const TraceOpenOptions& options);
/// The same over any seekable stream of `size` bytes (open_trace_memory); `name` stands for the path in messages.
std::unique_ptr<TraceSource> open_native_trace(std::unique_ptr<std::istream> in, uint64_t size,
                                               const std::string& name, const TraceOpenOptions& options);

}  // namespace hisparse::traces
