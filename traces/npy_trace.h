// @brief The `.npy` directory trace: req_<id>_topk.npy [steps, layers, K] + req_<id>_seq_lens.npy [steps].
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// The files of an `.npy` trace directory: on disk, or held in memory (open_npy_trace_memory).
class NpyFiles {
 public:
  virtual ~NpyFiles() = default;
  virtual std::vector<std::string> names() = 0;             // file names in the directory; throws if unlistable
  virtual bool exists(const std::string& name) = 0;
  virtual uint64_t size(const std::string& name) = 0;       // throws if it cannot tell
  virtual std::unique_ptr<std::istream> open(const std::string& name) = 0;  // throws if it cannot open
  virtual std::string path(const std::string& name) const = 0;              // for messages
};

/// Reads a directory of per-request `.npy` pairs (+ optional meta.json), one step at a time.
std::unique_ptr<TraceSource> open_npy_trace(const std::string& dir, const TraceOpenOptions& options);
/// The same over files held in memory, by name (the bytes must outlive the source); `dir` names them in messages.
std::unique_ptr<TraceSource> open_npy_trace_memory(const std::string& dir,
                                                   std::map<std::string, std::string_view> files,
                                                   const TraceOpenOptions& options);

}  // namespace hisparse::traces
