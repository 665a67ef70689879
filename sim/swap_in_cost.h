// @brief SwapInCopyCost: measured per-layer cost of the swap-in plan and its miss copy on one GPU (from a
// calibration file, sim/calibration.h); when present it replaces the roofline guess for both.
#pragma once

#include <cstdint>

#include "sim/sim_time.h"

namespace hisparse::sim {

/// One kernel's cost of one swap-in call (one layer, one GPU, `requests` rows of the batch):
///   plan  = plan_fixed + plan_per_request * requests + plan_per_slot * walked_H
///   copy  = copy_fixed + rows * row_bytes / min(link, row_rate, requests * per_request_row_rate)   (rows > 0)
/// The per-request rate bounds the copy when few requests share it (a fused kernel gives each request one
/// block); the row rate is the small-row (1152 B) rate of the whole GPU, below the bulk cudaMemcpy rate.
struct SwapInRegimeCost {
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
  /// The fixed part of a call that copies anything (rounded up to whole ns, as the simulator charges it).
  SimTime copy_latency_ns() const;
  /// Copy time of one call moving `bytes` over a link of `link_bytes_per_s` with nothing else on it.
  SimTime copy_ns(int64_t requests, double bytes, double link_bytes_per_s) const;
};

/// The swap-in of one device, per call. The CUDA swap-in runs one of two kernels by batch size: a
/// thread-block-cluster kernel for batches of 1..small_batch_max requests, the one-block-per-row kernel above;
/// their costs differ by a step, so each has its own terms. The inherited terms are the large-batch kernel's (the
/// only ones when small_batch_max is 0); every method below picks the regime by `requests`, so callers need not.
struct SwapInCopyCost : SwapInRegimeCost {
  bool calibrated = false;
  int64_t small_batch_max = 0;   // Bc: batches 1..Bc use `small`; 0 = one regime
  SwapInRegimeCost small;        // the small-batch kernel (meaningful only when small_batch_max > 0)

  /// The terms that apply to a call of `requests` (<= 0, "not known": the large regime).
  const SwapInRegimeCost& regime(int64_t requests) const;
  const SwapInRegimeCost& large() const { return *this; }
  SwapInRegimeCost& large() { return *this; }

  SimTime plan_ns(int64_t requests, int64_t walked_slots) const { return regime(requests).plan_ns(requests, walked_slots); }
  double copy_rate(int64_t requests) const { return regime(requests).copy_rate(requests); }
  SimTime copy_latency_ns(int64_t requests) const { return regime(requests).copy_latency_ns(); }
  SimTime copy_ns(int64_t requests, double bytes, double link_bytes_per_s) const {
    return regime(requests).copy_ns(requests, bytes, link_bytes_per_s);
  }
};

}  // namespace hisparse::sim
