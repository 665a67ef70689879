// @brief A token trace seen in pages (docs/selection.md, "Page traces"): every layer list becomes the distinct pages of P
// tokens its positions fall in, so that any replay, policy or backend that reads a TraceSource replays page
// granularity (TensorRT-LLM's page-level sparse attention for MQA/GQA: the selection and the KV move in pages).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "traces/trace_source.h"

namespace hisparse::traces {

/// Throws naming `what` unless 1 <= page_size <= kMaxTopK.
void check_page_size(int64_t page_size, const std::string& what);

/// The pages of P tokens that a list of `seq_len` tokens spans: ceil(seq_len / P).
inline int32_t pages_of(int32_t seq_len, int32_t page_size) { return (seq_len + page_size - 1) / page_size; }

/// The most distinct pages any layer list of `source` touches, reading it from its current position to the end.
int32_t widest_page_list(TraceSource& source, int32_t page_size);

/// Record by record: seq_len -> ceil(seq_len / P); each layer list -> its distinct pages (position / P), ascending,
/// -1 padded to the page width; request ids, steps and the initial state as the token trace. The page holding the
/// newest token (n - 1) is the newest page, which the swap-in serves from the reserved slot: it is being written on
/// the device.
class PageTraceSource final : public TraceSource {
 public:
  /// width = 0: the widest page list of the trace (one pass over `inner`, which must be at its start, then rewound),
  /// so no selection is lost and the width is no larger than needed. width > 0: that width; a list touching more
  /// pages is an error naming request, step and layer.
  PageTraceSource(std::unique_ptr<TraceSource> inner, int32_t page_size, int32_t width = 0);
  const TraceMeta& meta() const override { return meta_; }
  bool next(StepRecord& out) override;
  std::vector<int64_t> request_ids() override { return inner_->request_ids(); }
  void seek_request(int64_t request_id) override { inner_->seek_request(request_id); }
  int32_t page_size() const { return page_size_; }

 private:
  std::unique_ptr<TraceSource> inner_;
  int32_t page_size_;
  TraceMeta meta_;
  StepRecord tokens_;
  std::vector<int32_t> pages_;
};

}  // namespace hisparse::traces
