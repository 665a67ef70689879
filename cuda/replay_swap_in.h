// @brief The GPU side of `hisparse replay --backend cuda`: a batch of (request, layer) rows of one buffer size, their
// swap-in states resident on the device, stepped by the project's swap-in kernels (cuda/swap_in*.cu) in plan-only mode
// (no host pool, no KV copies); only the counters come back. No CUDA headers here (sim/replay/replay_cuda.cpp calls it).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/swap_in_types.h"
#include "cuda/swap_in.h"

namespace hisparse::cuda {

class ReplaySwapIn {
 public:
  /// `rows` rows of H slots at width top_k. Throws hisparse::Error when no GPU is present (naming why) or the shape
  /// does not fit the kernel.
  ReplaySwapIn(int32_t rows, int32_t H, int32_t top_k);
  ~ReplaySwapIn();
  ReplaySwapIn(const ReplaySwapIn&) = delete;
  ReplaySwapIn& operator=(const ReplaySwapIn&) = delete;

  /// Sets rows [first, first + count) to lru = 0..H-1 and slot_token identity or empty (init_swap_in_state).
  void init_rows(int32_t first, int32_t count, InitialState state);
  /// Uploads one step of every row (selected [rows][top_k], seq_len [rows]; seq_len <= 0: padding row, untouched).
  /// The buffers are reused by every step() until the next upload (one upload serves every buffer size).
  void upload(const int32_t* selected, const int32_t* seq_len);
  /// Uploads into another ReplaySwapIn's device buffers (same rows and top_k): no second copy per buffer size.
  void share_input_of(const ReplaySwapIn& other);
  /// Runs the swap-in of the uploaded step on every row; counters [rows][kCounterWords] and errors [rows][2] come
  /// back through collect().
  void step();
  void collect(int64_t* counters, int32_t* errors);
  /// Seconds the kernels ran (CUDA events around every step()), summed.
  double kernel_seconds() const;

  int32_t rows() const { return rows_; }
  int32_t H() const { return H_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int32_t rows_ = 0, H_ = 0, top_k_ = 0;
};

}  // namespace hisparse::cuda
