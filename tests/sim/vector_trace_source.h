// @brief An in-memory trace for replay tests: records handed out in order, grouped by request.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "traces/trace_source.h"

namespace hisparse {

/// An in-memory trace (records grouped by request).
class VectorSource final : public traces::TraceSource {
 public:
  VectorSource(traces::TraceMeta meta, std::vector<traces::StepRecord> recs)
      : meta_(std::move(meta)), recs_(std::move(recs)) {}
  const traces::TraceMeta& meta() const override { return meta_; }
  bool next(traces::StepRecord& out) override {
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
  traces::TraceMeta meta_;
  std::vector<traces::StepRecord> recs_;
  size_t i_ = 0;
};

}  // namespace hisparse
