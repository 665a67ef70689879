// @brief SwapInCopyCost: measured per-layer cost of the swap-in plan and its miss copy on one GPU (from a
// calibration file, sim/calibration/calibration.h); when present it replaces the roofline guess for both.
#pragma once

#include <cstdint>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// The shape of one swap-in call (one layer): what the copy's latency-round term needs besides the bytes.
struct SwapInCall {
  int64_t requests = 0;   // rows of the batch (each a request's layer)
  double rows = 0;        // rows copied by the call, all requests together
  int64_t row_bytes = 0;  // bytes per row
  int64_t H = 0;          // device-buffer slots per request (0 = not known: no slice bound)
  int64_t K = 0;          // top-k selections per request (0 = not known: every slot counted evictable)
  double bytes() const { return rows * static_cast<double>(row_bytes); }
};

/// One kernel's cost of one swap-in call (one layer, one GPU, `requests` rows of the batch):
///   plan  = plan_fixed + plan_per_request * requests + plan_per_slot * walked_H
///   copy  = copy_fixed + smax(bytes / rate, rounds * copy_round)                                   (rows > 0)
///   rate  = min(link, row_rate, requests * per_request_row_rate)
///   rounds = ceil(min(M, ceil((H - K + M) / copy_slices)) / copy_rows_per_round),  M = rows / requests
///   smax(a, b) = sqrt(a^2 + b^2)  (b = 0: exactly a, the linear form files without copy_round_ns mean)
/// Why (cuda/swap_in_cluster.cu, phase 5): the fused copy of the cluster kernel runs inside the swap-in, each of a
/// request's `copy_slices` blocks copying the misses served by its slice of the LRU, a warp per row, so a block keeps
/// `copy_rows_per_round` (its 32 warps) rows in flight and waits one PCIe read round trip per round. The misses take
/// the evictable slots coldest first, so the first slice serves min(M, its evictable slots) of them: with E = H - hits
/// evictable slots and hits = K - M, about min(M, E / slices). The call lasts as long as that block's rounds while the
/// link is not the bound, and rows / rate once it is; the smooth max covers the knee between them (the round trip
/// grows as the link fills). This is concave in rows (the busiest block's share saturates at E / slices) where the
/// linear form is not. The slice count assumes the hits are spread over the LRU as in the bench's states; a cold end
/// with fewer hits gives the first slice more misses (more rounds). The per-request rate bound is the linear form's
/// stand-in for the rounds of a one-block kernel (32 rows per round per request).
struct SwapInRegimeCost {
  double plan_fixed_ns = 0;                  // launch + hit detection at one request (includes the measured timing overhead)
  double plan_per_request_ns = 0;            // each further request in the batch
  double plan_per_slot_ns = 0;               // per device-buffer slot walked on the slow path (0: one H was measured)
  double copy_fixed_ns = 0;                  // extra fixed cost of a call that copies anything
  double row_bytes_per_s = 0;                // all requests together, small rows
  double per_request_row_bytes_per_s = 0;    // one request's share; 0 = unbounded
  double copy_round_ns = 0;                  // one round of row loads of the busiest block; 0 = linear copy (the form above without rounds)
  int64_t copy_rows_per_round = 0;           // rows a block has in flight per round (one per warp); 0 = a request's rows in one round
  int64_t copy_slices = 1;                   // blocks per request, each serving the misses of its LRU slice in order

  /// Plan time of one call; `walked_slots` is H when any request takes the slow path (n > H), else 0.
  SimTime plan_ns(int64_t requests, int64_t walked_slots) const;
  /// Rate the miss rows of `requests` move at, before the link's own capacity (bytes/s).
  double copy_rate(int64_t requests) const;
  /// The fixed part of a call that copies anything (rounded up to whole ns), without the latency rounds.
  SimTime copy_latency_ns() const;
  /// Load rounds of the busiest block of the call (0 when it copies nothing).
  double copy_rounds(const SwapInCall& call) const;
  /// The part of the call's copy the link model charges as its fixed latency: copy_fixed plus what the latency
  /// rounds add over the transfer at the call's own rate, smax(a, b) - a with a = bytes / min(copy_rate, link) and
  /// b = rounds * copy_round (rounded up to whole ns). The rest, bytes at copy_rate, is the flow on the shared link:
  /// so copy_latency_ns(call, link) + transfer_ns(bytes, min(copy_rate, link)) == copy_ns(call, link), and on a
  /// contended link the flow slows while the rounds part stays (the rounds are priced at the uncontended rate, so
  /// the total is at most the rounds' share above the exact smooth max there). 0 when the call copies nothing.
  SimTime copy_latency_ns(const SwapInCall& call, double link_bytes_per_s) const;
  /// Copy time of one call over a link of `link_bytes_per_s` (<= 0: no link bound) with nothing else on it.
  SimTime copy_ns(const SwapInCall& call, double link_bytes_per_s) const;
  /// The linear form only (copy_round_ns ignored): copy_fixed + bytes / rate. Equals copy_ns when copy_round_ns is 0.
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
  SimTime copy_latency_ns(const SwapInCall& call, double link_bytes_per_s) const {
    return regime(call.requests).copy_latency_ns(call, link_bytes_per_s);
  }
  SimTime copy_ns(const SwapInCall& call, double link_bytes_per_s) const {
    return regime(call.requests).copy_ns(call, link_bytes_per_s);
  }
  SimTime copy_ns(int64_t requests, double bytes, double link_bytes_per_s) const {
    return regime(requests).copy_ns(requests, bytes, link_bytes_per_s);
  }
};

}  // namespace hisparse::sim
