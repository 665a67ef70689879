// @brief A closed-loop run's steady state: decode tokens/s and the mean batch per dp rank over the decode steps that
// started while every client had a request in flight, so the ramp-down after the last request was sent (fewer and
// fewer clients left) stays out. This is the figure `advise`'s full-batch goodput is compared with
// (sim/api/advise_simulation.h): both describe a batch that stays full, one modelled per step, one simulated.
#pragma once

#include <cstdint>

#include "sim/serving/serving_simulation.h"

namespace hisparse::sim {

struct SteadyWindow {
  double tokens_per_s = 0;     // decode tokens per second over the window, summed over instances (MTP's tokens included)
  double batch_per_rank = 0;   // mean requests per dp rank over the window's steps
  double seconds = 0;          // the window's length (first steady step's start to last one's end), longest instance
  int64_t steps = 0;           // instance steps in the window
  bool found() const { return steps > 0; }
};

/// The steady window of a closed-loop run with recorded steps (empty for an open-loop run or without steps).
SteadyWindow steady_window(const ServingResult& result);

}  // namespace hisparse::sim
