// @brief Format detection behind open_trace, the writer factory and the copy loop of `trace convert`.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/not_found_error.h"
#include "traces/jsonl_trace.h"
#include "traces/memory_stream.h"
#include "traces/native_format.h"
#include "traces/native_trace.h"
#include "traces/npy_trace.h"
#include "traces/trace_writer.h"

namespace hisparse::traces {

const char* to_string(InitialState state) { return state == InitialState::kEmpty ? "empty" : "identity"; }

InitialState parse_initial_state(const std::string& text, const std::string& what) {
  if (text == "identity") return InitialState::kIdentity;
  if (text == "empty") return InitialState::kEmpty;
  throw_error("{}: '{}' is not an initial state (expected identity or empty)", what, text);
}

TraceFormat parse_trace_format(const std::string& text, bool allow_jsonl) {
  if (text == "native") return TraceFormat::kNative;
  if (text == "npy") return TraceFormat::kNpy;
  if (allow_jsonl && text == "jsonl") return TraceFormat::kJsonl;
  throw_error("format '{}' unknown (expected native{})", text, allow_jsonl ? ", npy or jsonl" : " or npy");
}

namespace {

/// The format of a file whose first `got` bytes (at most 8) are `head`; `name` for the message.
TraceFormat format_of_head(const char* head, size_t got, const std::string& name) {
  if (got == sizeof kNativeMagic && std::equal(head, head + sizeof kNativeMagic, kNativeMagic)) {
    return TraceFormat::kNative;
  }
  for (size_t i = 0; i < got; ++i) {
    const char c = head[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '{') return TraceFormat::kJsonl;
    break;
  }
  if (got >= 6 && std::equal(head, head + 6, "\x93NUMPY")) {
    throw_error("{}: a single .npy file; pass the directory holding req_<id>_topk.npy and req_<id>_seq_lens.npy",
                name);
  }
  throw_error("{}: not a trace: neither the native magic, nor JSON lines, nor an .npy directory", name);
}

}  // namespace

TraceFormat detect_trace_format(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return TraceFormat::kNpy;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path, ec)) throw_not_found("{}: no such trace file or directory", path);
    throw_error("{}: cannot open trace", path);
  }
  char head[sizeof(kNativeMagic)] = {};
  in.read(head, sizeof head);
  return format_of_head(head, static_cast<size_t>(in.gcount()), path);
}

std::unique_ptr<TraceSource> open_trace(const std::string& path, const TraceOpenOptions& options) {
  switch (detect_trace_format(path)) {
    case TraceFormat::kNative: return open_native_trace(path, options);
    case TraceFormat::kNpy: return open_npy_trace(path, options);
    case TraceFormat::kJsonl: return open_jsonl_trace(path, options);
  }
  throw_error("{}: unknown trace format", path);
}

std::unique_ptr<TraceSource> open_trace_memory(const void* data, size_t size, const std::string& name,
                                               const TraceOpenOptions& options) {
  const char* bytes = static_cast<const char*>(data);
  switch (format_of_head(bytes, std::min(size, sizeof kNativeMagic), name)) {
    case TraceFormat::kNative:
      return open_native_trace(std::make_unique<MemoryInputStream>(bytes, size), size, name, options);
    case TraceFormat::kJsonl: return open_jsonl_trace(std::make_unique<MemoryInputStream>(bytes, size), name, options);
    case TraceFormat::kNpy: break;  // a directory: open_npy_trace_memory
  }
  throw_error("{}: unknown trace format", name);
}

std::unique_ptr<TraceWriter> make_trace_writer(const std::string& path, TraceFormat format, const TraceMeta& meta,
                                               const TraceWriteOptions& options) {
  switch (format) {
    case TraceFormat::kNative: return make_native_writer(path, meta, options);
    case TraceFormat::kNpy: return make_npy_writer(path, meta);
    case TraceFormat::kJsonl: break;
  }
  throw_error("{}: writing JSON lines is not supported (use native or npy)", path);
}

int64_t copy_trace(TraceSource& in, TraceWriter& out) {
  StepRecord rec;
  int64_t steps = 0;
  while (in.next(rec)) {
    out.write(rec);
    ++steps;
  }
  out.finish();
  return steps;
}

}  // namespace hisparse::traces
