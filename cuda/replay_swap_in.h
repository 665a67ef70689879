// @brief The GPU side of `hisparse replay --backend cuda`: a batch of (request, layer) rows, one swap-in state set per
// buffer size resident on the device, stepped by the project's swap-in kernels (cuda/swap_in*.cu) in plan-only mode
// (no host pool, no KV copies); only the counters come back. No CUDA headers here (sim/replay/cuda/replay_cuda.cpp calls it).
//
// Pipelined: a ring of `slots` staged steps, each with pinned host buffers and its own device input buffers. The host
// fills a slot's pinned buffers, submit() queues its upload on a copy stream and its kernels and counter read-back on a
// compute stream and returns at once, so that the host reads step s+1 while the GPU uploads and runs step s (and the
// upload of step s+1 overlaps the kernels of step s). wait(slot) hands the slot back: counters readable, staging
// writable.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/swap_in_types.h"
#include "cuda/swap_in.h"

namespace hisparse::cuda {

/// What a row's state is before this step's swap-in (one code per row, staged with the step).
enum ReplayRowInit : int8_t {
  kReplayRowKeep = 0,       // continue from the previous step's state
  kReplayRowIdentity = 1,   // a new request: lru = 0..H-1, slot s holds token s
  kReplayRowEmptyUnlessFits = 2,  // a new `empty` request: empty slots, except identity when this step's n <= H
                                  // (the whole context was preloaded: SwapInPolicy::step, the CPU replay's rule)
};

class ReplaySwapIn {
 public:
  /// `rows` rows of width top_k, one state per row and buffer size, `slots` (>= 1) steps in flight. Throws
  /// hisparse::Error when no GPU is present (naming why) or a shape does not fit the kernel.
  ReplaySwapIn(int32_t rows, int32_t top_k, const std::vector<int32_t>& buffer_sizes, int32_t slots);
  ~ReplaySwapIn();
  ReplaySwapIn(const ReplaySwapIn&) = delete;
  ReplaySwapIn& operator=(const ReplaySwapIn&) = delete;

  /// Pinned staging of a slot: selected [rows][top_k], seq_len [rows] (<= 0: padding row, its state untouched),
  /// init [rows] (ReplayRowInit). Writable after construction and after wait(slot), until submit(slot).
  int32_t* selected(int32_t slot);
  int32_t* seq_len(int32_t slot);
  int8_t* init(int32_t slot);
  /// Queues the slot's step: upload, the state resets of rows whose init is set (only when any_init), one swap-in
  /// launch per buffer size, counters and errors back to pinned memory. Returns without waiting.
  void submit(int32_t slot, bool any_init);
  /// Blocks until the slot's last submit finished (a CUDA error, a kernel fault included, throws here).
  void wait(int32_t slot);
  /// After wait(slot): [rows][kCounterWords] and [rows][2] (code, entry) of buffer size `config` (constructor order).
  const int64_t* counters(int32_t slot, size_t config) const;
  const int32_t* errors(int32_t slot, size_t config) const;
  /// Seconds the swap-in kernels ran (CUDA events around each submit's kernels, read back by wait), summed.
  double kernel_seconds() const;

  int32_t rows() const { return rows_; }
  int32_t slots() const { return slots_; }
  /// Pinned bytes of the staging ring (what the host holds for steps in flight).
  size_t staging_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int32_t rows_ = 0, top_k_ = 0, slots_ = 0;
};

}  // namespace hisparse::cuda
