// @brief Run-time tuning knobs of the CUDA kernels: an integer environment variable, read once per process, so one
// GPU session can sweep launch shapes without a rebuild.
#pragma once

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace hisparse::cuda::detail {

/// The value of environment variable `name`, or `fallback` when unset or empty; anything but an integer in
/// [lo, hi] is an error naming the variable (a silently ignored typo would make a sweep measure the default).
inline long env_knob(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != 0 || x < lo || x > hi)
    throw_error("environment variable {} = '{}', expected an integer in {} .. {}", name, v, lo, hi);
  return x;
}

}  // namespace hisparse::cuda::detail
