// @brief The top-k trace contract (docs/traces.md): one streaming record per (request, step), any format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/swap_in_types.h"

namespace hisparse::traces {

/// What every reader knows before the first record.
struct TraceMeta {
  int32_t layers = 0;  // layers per step record
  int32_t top_k = 0;   // K: width of each layer's list (lists may hold fewer valid entries, -1 padded)
  InitialState initial_state = InitialState::kIdentity;  // from core/swap_in_types.h
  std::string source;                                    // path, for error messages
  // Additions beyond the contract: the .npy element sizes the trace came from (4 = int32, 8 = int64), kept so
  // that `.npy -> native -> .npy` reproduces the original files byte for byte.
  int32_t topk_dtype_bytes = 4;
  int32_t seq_lens_dtype_bytes = 4;
};

/// One decode step of one request: every layer's selection, layer-major.
struct StepRecord {
  int64_t request_id = 0;          // the id from the file name (npy) / the record (jsonl) / the native header
  int64_t step = 0;                // 0-based step index within the request, in trace order
  int32_t seq_len = 0;             // n at this step
  std::vector<int32_t> positions;  // [layers * top_k], layer-major, order as recorded, -1 = padding
  const int32_t* layer(int l, int top_k) const { return positions.data() + static_cast<size_t>(l) * top_k; }
};

/// Streaming: memory independent of trace length.
class TraceSource {
 public:
  virtual ~TraceSource() = default;
  virtual const TraceMeta& meta() const = 0;
  virtual bool next(StepRecord& out) = 0;             // false at end; grouped by request, steps ascending
  virtual std::vector<int64_t> request_ids() = 0;     // in file order
  virtual void seek_request(int64_t request_id) = 0;  // next() then yields that request's first step
};

/// Command-line overrides of what the trace itself declares.
struct TraceOpenOptions {
  std::optional<InitialState> initial_state;
  std::optional<int32_t> top_k;
};

/// Auto-detects the format: a directory is an `.npy` trace, a file starting with the native magic is native,
/// a file starting with '{' is JSON lines. Throws hisparse::Error otherwise.
std::unique_ptr<TraceSource> open_trace(const std::string& path, const TraceOpenOptions& options = {});
/// A native or JSON-lines trace held in memory (told apart by its first bytes as open_trace does); the bytes must
/// outlive the source, `name` stands for the path in messages. (The fuzz targets: no scratch file per input.)
std::unique_ptr<TraceSource> open_trace_memory(const void* data, size_t size, const std::string& name,
                                               const TraceOpenOptions& options = {});

enum class TraceFormat { kNative, kNpy, kJsonl };

/// The format open_trace would pick for `path` (throws if none fits).
TraceFormat detect_trace_format(const std::string& path);

const char* to_string(InitialState state);
/// "identity" | "empty"; throws naming `what` otherwise.
InitialState parse_initial_state(const std::string& text, const std::string& what);

}  // namespace hisparse::traces
