// @brief Shared body of the trace-reader fuzz targets: open, read everything, list and seek; only Error may escape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "traces/trace_source.h"

namespace hisparse::fuzz {

/// A per-process scratch directory (fuzzers may run in parallel jobs).
inline const std::string& scratch() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("hisparse_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

inline void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

/// Exercises every entry point of the reader on `path`. A hisparse::Error is the expected answer to bad input;
/// anything else (another exception, a sanitizer report, a timeout) is a finding.
inline void exercise(const std::string& path) {
  try {
    auto src = traces::open_trace(path);
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
