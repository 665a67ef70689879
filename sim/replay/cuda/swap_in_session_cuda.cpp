// @brief CudaSwapInSession (see swap_in_session_cuda.h): the session's staging is the device ring's pinned buffers for
// what the kernels read (lists, lengths) and host arrays for the rest (reset codes, error naming).
#include "sim/replay/cuda/swap_in_session_cuda.h"

#include "core/error.h"
#include "cuda/replay_swap_in.h"

namespace hisparse::sim {

namespace {

const char* error_name(int32_t code) {
  switch (code) {
    case cuda::kSwapInOutOfRange: return "a position out of [0, seq_len) or a negative entry other than -1";
    case cuda::kSwapInDuplicate: return "a position selected twice";
    case cuda::kSwapInNoHostCopy: return "a miss without a host copy";
    case cuda::kSwapInHostRowOutOfPool: return "a host row outside the pool";
    case cuda::kSwapInCorruptState: return "more misses than evictable slots (corrupt state)";
    default: return "an unknown error code";
  }
}

std::vector<int32_t> buffer_sizes(const SwapInSessionShape& shape) {
  std::vector<int32_t> out;
  for (const SessionConfig& c : shape.configs) {
    if (c.policy != "sglang-lru")
      throw_error("replay --backend cuda: policy '{}': the swap-in kernels implement sglang-lru (the contract) only; "
                  "replay '{}' with --backend cpu",
                  c.policy, c.policy);
    out.push_back(c.H);
  }
  return out;
}

}  // namespace

CudaSwapInSession::CudaSwapInSession(SwapInSessionShape shape, int32_t slots) : shape_(std::move(shape)), slots_(slots) {
  if (slots < 1 || slots > 64) throw_error("replay --backend cuda: {} staging slots (expected 1..64)", slots);
  const std::vector<int32_t> sizes = buffer_sizes(shape_);
  dev_ = std::make_unique<cuda::ReplaySwapIn>(shape_.rows, shape_.top_k, sizes, slots);
  const size_t rows = static_cast<size_t>(shape_.rows);
  host_.resize(static_cast<size_t>(slots));
  for (Slot& s : host_) {
    s.init.assign(rows, SessionRowInit::kKeep);
    s.request.assign(rows, 0);
    s.step.assign(rows, 0);
    s.layer.assign(rows, 0);
    s.counts.assign(sizes.size(), std::vector<SessionRowCounts>(rows));
  }
}

CudaSwapInSession::~CudaSwapInSession() = default;

SessionStaging CudaSwapInSession::staging(int32_t slot) {
  Slot& s = host_.at(static_cast<size_t>(slot));
  return {dev_->selected(slot), dev_->seq_len(slot), s.init.data(), s.request.data(), s.layer.data(), s.step.data()};
}

void CudaSwapInSession::submit(int32_t slot) {
  const Slot& s = host_.at(static_cast<size_t>(slot));
  // The kernels' reset codes: a new request starts as identity, or, for an `empty` trace, empty unless its first
  // step fits the buffer (the preload rule, applied on the device per buffer size).
  const auto start = static_cast<int8_t>(shape_.initial == InitialState::kEmpty ? cuda::kReplayRowEmptyUnlessFits
                                                                                : cuda::kReplayRowIdentity);
  int8_t* init = dev_->init(slot);
  bool any_init = false;
  for (size_t b = 0; b < s.init.size(); ++b) {
    const bool fresh = s.init[b] == SessionRowInit::kStart;
    init[b] = fresh ? start : static_cast<int8_t>(cuda::kReplayRowKeep);
    any_init = any_init || fresh;
  }
  dev_->submit(slot, any_init);
}

void CudaSwapInSession::wait(int32_t slot) {
  dev_->wait(slot);
  Slot& s = host_.at(static_cast<size_t>(slot));
  const size_t rows = s.init.size();
  const int32_t* seq_len = dev_->seq_len(slot);
  for (size_t b = 0; b < rows; ++b) {
    for (size_t c = 0; c < s.counts.size(); ++c) {
      const int32_t* errors = dev_->errors(slot, c);
      if (seq_len[b] > 0 && errors[b * 2] != 0)
        throw_error("replay --backend cuda: request {}, layer {}, step {}: the swap-in kernel rejected entry {}: {}",
                    s.request[b], s.layer[b], s.step[b], errors[b * 2 + 1], error_name(errors[b * 2]));
    }
  }
  for (size_t c = 0; c < s.counts.size(); ++c) {
    const int64_t* k = dev_->counters(slot, c);
    for (size_t b = 0; b < rows; ++b) {
      const int64_t* w = k + b * cuda::kCounterWords;
      s.counts[c][b] = {static_cast<int32_t>(w[0]), static_cast<int32_t>(w[1]), static_cast<int32_t>(w[2]),
                        static_cast<int32_t>(w[3])};
    }
  }
}

const SessionRowCounts* CudaSwapInSession::counts(int32_t slot, size_t config) const {
  return host_.at(static_cast<size_t>(slot)).counts.at(config).data();
}

size_t CudaSwapInSession::staging_bytes() const { return dev_->staging_bytes(); }

double CudaSwapInSession::backend_seconds() const { return dev_->kernel_seconds(); }

}  // namespace hisparse::sim
