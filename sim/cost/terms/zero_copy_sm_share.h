// @brief The share of a GPU's SMs a zero-copy swap-in holds while it copies: in two-batch mode that copy runs under
// the other micro-batch's compute, which loses those SMs for as long as the two overlap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/cost/terms/swap_in_cost.h"

namespace hisparse::sim {

/// Fraction of the `sm_count` SMs one swap-in call of `requests` rows holds while its rows are in flight, from the
/// kernel's launch shape (cuda/swap_in.cu, cuda/swap_in_cluster.cu):
///   fused, small batch (requests <= Bc): a cluster of sm_count / Bc blocks per row (the launcher picks Bc so one
///     row per cluster fills the GPU in one wave), each block holding an SM: requests / Bc of the GPU;
///   fused, large batch: one block per row with the LRU state in shared memory, an SM each: requests / sm_count;
///   separate: the copy kernel's grid (chunks of K, rows) has more blocks than the GPU has SMs: all of them.
/// 0 when the SM count is not known (the hardware file gives none): the time is then not charged.
inline double zero_copy_sm_share(const std::string& copy_mode, const SwapInCopyCost& cost, int64_t requests, int sm_count) {
  if (sm_count <= 0 || requests <= 0) return 0;
  if (copy_mode == "separate") return 1;
  if (cost.calibrated && cost.small_batch_max > 0 && requests <= cost.small_batch_max)
    return std::min(1.0, static_cast<double>(requests) / static_cast<double>(cost.small_batch_max));
  return std::min(1.0, static_cast<double>(requests) / sm_count);
}

}  // namespace hisparse::sim
