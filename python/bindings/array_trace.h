// @brief A TraceSource over numpy arrays (python/bindings/facade.h's ArrayTrace): what run_replay and the writers read
// when Python hands over arrays instead of a path. Records come grouped by request, steps 0, 1, 2, ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "python/bindings/facade.h"
#include "traces/trace_source.h"

namespace hisparse::python {

class ArrayTraceSource final : public traces::TraceSource {
 public:
  /// `trace` (and the arrays it points to) must outlive the source.
  explicit ArrayTraceSource(const ArrayTrace& trace);
  const traces::TraceMeta& meta() const override { return meta_; }
  bool next(traces::StepRecord& out) override;
  std::vector<int64_t> request_ids() override;
  void seek_request(int64_t request_id) override;

 private:
  const ArrayTrace& trace_;
  traces::TraceMeta meta_;
  size_t request_ = 0;
  int64_t step_ = 0;
};

}  // namespace hisparse::python
