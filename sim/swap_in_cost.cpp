// @brief SwapInCopyCost arithmetic: the one place the calibrated plan and copy times are computed.
#include "sim/swap_in_cost.h"

#include <algorithm>
#include <cmath>

namespace hisparse::sim {

SimTime SwapInRegimeCost::plan_ns(int64_t requests, int64_t walked_slots) const {
  if (requests <= 0) return 0;
  const double t = plan_fixed_ns + plan_per_request_ns * static_cast<double>(requests) +
                   plan_per_slot_ns * static_cast<double>(walked_slots);
  return static_cast<SimTime>(std::ceil(std::max(0.0, t)));
}

double SwapInRegimeCost::copy_rate(int64_t requests) const {
  double r = row_bytes_per_s;
  if (per_request_row_bytes_per_s > 0 && requests > 0)
    r = std::min(r, per_request_row_bytes_per_s * static_cast<double>(requests));
  return r;
}

SimTime SwapInRegimeCost::copy_latency_ns() const { return static_cast<SimTime>(std::ceil(std::max(0.0, copy_fixed_ns))); }

SimTime SwapInRegimeCost::copy_ns(int64_t requests, double bytes, double link_bytes_per_s) const {
  if (!(bytes > 0)) return 0;
  double rate = copy_rate(requests);
  if (link_bytes_per_s > 0) rate = std::min(rate, link_bytes_per_s);
  // The simulator charges the fixed part as the flow's latency and the rest at the flow's rate: same sum here.
  return copy_latency_ns() + transfer_ns(bytes, rate);
}

const SwapInRegimeCost& SwapInCopyCost::regime(int64_t requests) const {
  if (small_batch_max > 0 && requests >= 1 && requests <= small_batch_max) return small;
  return *this;
}

}  // namespace hisparse::sim
