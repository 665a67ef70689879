// @brief Writers of the native format and `.npy` directories, and the copy loop behind `trace convert`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "traces/trace_source.h"

namespace hisparse::traces {

struct TraceWriteOptions {
  int zstd_level = 3;              // native: zstd level of each chunk
  bool compress = true;            // native: false stores chunks uncompressed (debugging, fuzz seeds)
  size_t chunk_bytes = 1 << 20;    // native: a chunk is closed once its encoded steps exceed this many bytes
};

/// Receives records grouped by request with steps 0, 1, 2, ... (what every TraceSource yields). Output appears
/// at its path only after finish(): it is written under a temporary name, then renamed.
class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  virtual void write(const StepRecord& rec) = 0;
  virtual void finish() = 0;
  /// Bytes of the output written so far (every file of a directory format); what `trace gen` reports, measured on
  /// the write rather than the target, which may be a device that keeps nothing (/dev/null).
  virtual uint64_t bytes_written() const = 0;
};

std::unique_ptr<TraceWriter> make_native_writer(const std::string& path, const TraceMeta& meta,
                                                const TraceWriteOptions& options = {});
/// `dir` must not exist or be empty. Writes req_<id>_topk.npy / req_<id>_seq_lens.npy with the element sizes in
/// `meta` and a meta.json with initial_state and top_k.
std::unique_ptr<TraceWriter> make_npy_writer(const std::string& dir, const TraceMeta& meta);
std::unique_ptr<TraceWriter> make_trace_writer(const std::string& path, TraceFormat format, const TraceMeta& meta,
                                               const TraceWriteOptions& options = {});

/// Streams every record of `in` (from its current position) into `out`, then finishes it. Returns the steps.
int64_t copy_trace(TraceSource& in, TraceWriter& out);

/// "native" | "npy" (| "jsonl" when `allow_jsonl`); throws otherwise.
TraceFormat parse_trace_format(const std::string& text, bool allow_jsonl = false);

}  // namespace hisparse::traces
