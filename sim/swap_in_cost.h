// @brief SwapInCopyCost: measured per-layer cost of the swap-in plan and its miss copy on one GPU (from a
// calibration file, sim/calibration.h); when present it replaces the roofline guess for both.
#pragma once

#include <cstdint>

#include "sim/sim_time.h"

namespace hisparse::sim {

/// One swap-in call (one layer, one GPU, `requests` rows of the batch):
///   plan  = plan_fixed + plan_per_request * requests + plan_per_slot * walked_H
///   copy  = copy_fixed + rows * row_bytes / min(link, row_rate, requests * per_request_row_rate)   (rows > 0)
/// The per-request rate bounds the copy when few requests share it (a fused kernel gives each request one
/// block); the row rate is the small-row (1152 B) rate of the whole GPU, below the bulk cudaMemcpy rate.
struct SwapInCopyCost {
  bool calibrated = false;
  double plan_fixed_ns = 0;                  // launch + hit detection at one request (includes the measured timing overhead)
  double plan_per_request_ns = 0;            // each further request in the batch
  double plan_per_slot_ns = 0;               // per device-buffer slot walked on the slow path (0: one H was measured)
  double copy_fixed_ns = 0;                  // extra fixed cost of a call that copies anything
  double row_bytes_per_s = 0;                // all requests together, small rows
  double per_request_row_bytes_per_s = 0;    // one request's share; 0 = unbounded

  /// Plan time of one call; `walked_slots` is H when any request takes the slow path (n > H), else 0.
  SimTime plan_ns(int64_t requests, int64_t walked_slots) const;
  /// Rate the miss rows of `requests` move at, before the link's own capacity (bytes/s).
  double copy_rate(int64_t requests) const;
  /// Copy time of one call moving `bytes` over a link of `link_bytes_per_s` with nothing else on it.
  SimTime copy_ns(int64_t requests, double bytes, double link_bytes_per_s) const;
};

}  // namespace hisparse::sim
