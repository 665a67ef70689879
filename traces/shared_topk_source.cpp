// @brief Shared layers take their anchor's top-k list (shared_topk_source.h).
#include "traces/shared_topk_source.h"

#include <algorithm>

#include "core/error.h"
#include "core/topk_schedule.h"

namespace hisparse::traces {

void check_shared_topk(int32_t freq, int32_t offset, int32_t layers, const std::string& what) {
  if (freq < 1 || freq > layers)
    throw_error("{}: top-k group {} out of range (expected 1..{}, the trace's layers)", what, freq, layers);
  if (offset < 1 || offset > layers)
    throw_error("{}: skip offset {} out of range (expected 1..{}, the trace's layers)", what, offset, layers);
}

SharedTopkTraceSource::SharedTopkTraceSource(std::unique_ptr<TraceSource> inner, int32_t freq, int32_t offset)
    : inner_(std::move(inner)) {
  const int32_t layers = inner_->meta().layers;
  check_shared_topk(freq, offset, layers, inner_->meta().source);
  anchor_.resize(static_cast<size_t>(layers));
  for (int32_t l = 0; l < layers; ++l) anchor_[static_cast<size_t>(l)] = topk_anchor_of(l, freq, offset);
}

int32_t SharedTopkTraceSource::shared_layers() const {
  int32_t n = 0;
  for (size_t l = 0; l < anchor_.size(); ++l) n += anchor_[l] != static_cast<int32_t>(l) ? 1 : 0;
  return n;
}

bool SharedTopkTraceSource::next(StepRecord& out) {
  if (!inner_->next(out)) return false;
  const auto K = static_cast<size_t>(inner_->meta().top_k);
  // Anchors come before the layers that share them, and keep their own list: copy in ascending layer order.
  for (size_t l = 0; l < anchor_.size(); ++l) {
    const auto a = static_cast<size_t>(anchor_[l]);
    if (a == l) continue;
    std::copy_n(out.positions.begin() + static_cast<std::ptrdiff_t>(a * K), K,
                out.positions.begin() + static_cast<std::ptrdiff_t>(l * K));
  }
  return true;
}

}  // namespace hisparse::traces
