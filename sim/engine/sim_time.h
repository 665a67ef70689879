// @brief SimTime: simulated time as integer nanoseconds, and the conversions between it and rates/seconds.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace hisparse::sim {

/// Simulated time in nanoseconds. Integer so that event order never depends on floating-point rounding.
using SimTime = int64_t;

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();
inline constexpr SimTime kNsPerSecond = 1'000'000'000;

/// Seconds → ns, rounded up so a non-zero duration never collapses to 0 (which would loop at one instant).
inline SimTime seconds_to_ns_ceil(double seconds) {
  if (!(seconds > 0)) return 0;
  return static_cast<SimTime>(std::ceil(seconds * 1e9));
}

/// Time to move `bytes` at `bytes_per_s`, rounded up to whole ns.
inline SimTime transfer_ns(double bytes, double bytes_per_s) {
  if (!(bytes > 0)) return 0;
  return seconds_to_ns_ceil(bytes / bytes_per_s);
}

inline double ns_to_seconds(SimTime t) { return static_cast<double>(t) * 1e-9; }

/// The longest span a flag in seconds may give: int64 nanoseconds hold 9.2e9 s (292 years); 1e9 s leaves room to
/// add spans without overflow and is longer than any workload (the shipped ones span minutes to days).
inline constexpr double kMaxFlagSeconds = 1e9;

}  // namespace hisparse::sim
