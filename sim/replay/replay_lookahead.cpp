// @brief The look-ahead stage of the replay driver (see replay_lookahead.h).
#include "sim/replay/replay_lookahead.h"

#include <algorithm>
#include <utility>

namespace hisparse::sim::replay_detail {

size_t lookahead_steps(size_t bytes, int32_t layers, int32_t top_k, size_t offline_sizes) {
  // A next-use index is one int32 per entry, a record's size: the budget covers 1 + offline_sizes records per step.
  const size_t record = static_cast<size_t>(layers) * static_cast<size_t>(top_k) * sizeof(int32_t);
  return std::max<size_t>(2, bytes / (record * (1 + offline_sizes)));
}

size_t future_bytes(const cpu_ref::LayerFuture& f) {
  return f.step_begin.capacity() * sizeof(int64_t) +
         (f.next_use.capacity() + f.first_use.capacity() + f.first_use_keys.capacity()) * sizeof(int32_t);
}

bool LookAheadWindow::read(traces::TraceSource& src) {
  have_pending_ = src.next(pending_) && pending_.request_id == id_;
  if (have_pending_) shape_->check(pending_);
  return have_pending_;
}

bool LookAheadWindow::start(const LookAheadShape& shape, traces::TraceSource& src, int64_t id) {
  shape_ = &shape;
  id_ = id;
  nbuf_ = pos_ = stage_ = 0;
  cut_ = false;
  futures_.assign(static_cast<size_t>(shape.layers),
                  std::vector<std::shared_ptr<const cpu_ref::LayerFuture>>(shape.offline_H.size()));
  layer_bytes_.assign(static_cast<size_t>(shape.layers), 0);
  if (!read(src)) return false;
  fill(src);
  return true;
}

void LookAheadWindow::fill(traces::TraceSource& src) {
  while (have_pending_ && nbuf_ < shape_->steps) {
    if (recs_.size() <= nbuf_) recs_.emplace_back();
    std::swap(recs_[nbuf_++], pending_);
    read(src);
  }
  // The request ends inside the window: all of it is staged. Else its first half; the rest stays as look-ahead.
  stage_ = have_pending_ ? std::max<size_t>(1, nbuf_ / 2) : nbuf_;
  cut_ = cut_ || have_pending_;
  owed_ = true;
}

const traces::StepRecord* LookAheadWindow::next(traces::TraceSource& src) {
  if (pos_ == stage_) {
    if (!have_pending_) return nullptr;
    // Slide: the steps staged go (swaps of record buffers, no copies), the look-ahead moves to the front.
    std::rotate(recs_.begin(), recs_.begin() + static_cast<std::ptrdiff_t>(stage_),
                recs_.begin() + static_cast<std::ptrdiff_t>(nbuf_));
    nbuf_ -= stage_;
    pos_ = 0;
    fill(src);
  }
  return &recs_[pos_++];
}

void LookAheadWindow::build_futures(int32_t l) {
  const int32_t K = shape_->top_k;
  std::vector<const int32_t*> sel(nbuf_);
  std::vector<int32_t> counts(nbuf_, K), ns(nbuf_);
  for (size_t j = 0; j < nbuf_; ++j) {
    sel[j] = recs_[j].layer(l, K);
    ns[j] = recs_[j].seq_len;
  }
  size_t bytes = 0;
  auto& f = futures_[static_cast<size_t>(l)];
  for (size_t h = 0; h < shape_->offline_H.size(); ++h) {
    f[h] = std::make_shared<const cpu_ref::LayerFuture>(cpu_ref::build_layer_future(sel, counts, ns, shape_->offline_H[h]));
    bytes += future_bytes(*f[h]);
  }
  layer_bytes_[static_cast<size_t>(l)] = bytes;
}

size_t LookAheadWindow::held_bytes() const {
  size_t b = nbuf_ * static_cast<size_t>(shape_->layers) * static_cast<size_t>(shape_->top_k) * sizeof(int32_t);
  for (size_t x : layer_bytes_) b += x;
  return b;
}

}  // namespace hisparse::sim::replay_detail
