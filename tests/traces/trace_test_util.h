// @brief Helpers shared by the trace tests: scratch directories, reading a whole source, small hand-made traces.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "traces/trace_source.h"
#include "traces/trace_writer.h"

namespace hisparse::traces::testing {

/// A fresh, empty directory under the build tree (removed and recreated on each call).
inline std::string scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::path(HISPARSE_BINARY_DIR) / "test_scratch" /
                   ("traces_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::vector<StepRecord> read_all(TraceSource& src) {
  std::vector<StepRecord> out;
  StepRecord rec;
  while (src.next(rec)) out.push_back(rec);
  return out;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// An in-memory TraceSource over given records (for writing hand-made traces).
class VectorTrace final : public TraceSource {
 public:
  VectorTrace(TraceMeta meta, std::vector<StepRecord> recs) : meta_(std::move(meta)), recs_(std::move(recs)) {}
  const TraceMeta& meta() const override { return meta_; }
  bool next(StepRecord& out) override {
    if (i_ >= recs_.size()) return false;
    out = recs_[i_++];
    return true;
  }
  std::vector<int64_t> request_ids() override {
    std::vector<int64_t> ids;
    for (const auto& r : recs_) {
      if (ids.empty() || ids.back() != r.request_id) ids.push_back(r.request_id);
    }
    return ids;
  }
  void seek_request(int64_t id) override {
    for (i_ = 0; i_ < recs_.size() && recs_[i_].request_id != id; ++i_) {
    }
  }

 private:
  TraceMeta meta_;
  std::vector<StepRecord> recs_;
  size_t i_ = 0;
};

inline void write_trace(TraceSource& src, const std::string& path, TraceFormat format,
                        const TraceWriteOptions& options = {}) {
  auto w = make_trace_writer(path, format, src.meta(), options);
  copy_trace(src, *w);
}

}  // namespace hisparse::traces::testing
