// @brief A trace seen with IndexShare's shared layers (core/topk_schedule.h): each layer that reuses an anchor's top-k
// gets its anchor's list, whatever the trace recorded for it, so that a replay of a GLM-5.2-style model moves the rows
// the served model would select (a shared layer reads its own KV at the anchor's positions, and its buffer sees the
// anchor's selections).
#pragma once

#include <cstdint>
#include <memory>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Throws naming `what` unless 1 <= freq <= layers and 1 <= offset <= layers.
void check_shared_topk(int32_t freq, int32_t offset, int32_t layers, const std::string& what);

class SharedTopkTraceSource final : public TraceSource {
 public:
  /// freq, offset: index_topk_freq and index_skip_topk_offset (the declaration of which layers are shared).
  SharedTopkTraceSource(std::unique_ptr<TraceSource> inner, int32_t freq, int32_t offset);
  const TraceMeta& meta() const override { return inner_->meta(); }
  bool next(StepRecord& out) override;
  std::vector<int64_t> request_ids() override { return inner_->request_ids(); }
  void seek_request(int64_t request_id) override { inner_->seek_request(request_id); }
  int32_t shared_layers() const;  // layers that take an anchor's list

 private:
  std::unique_ptr<TraceSource> inner_;
  std::vector<int32_t> anchor_;  // per layer, the layer whose list it uses
};

}  // namespace hisparse::traces
