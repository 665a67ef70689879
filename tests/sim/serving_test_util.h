// @brief What the serving-simulation tests share: a seeded Poisson workload of mixed lengths.
#pragma once

#include <cstdint>

#include "sim/workload/workload.h"

namespace hisparse::sim {

/// `rate` requests per second for `seconds`, inputs 1,000…40,000 and outputs 8…64 tokens, from `seed`.
inline Workload generated(uint64_t seed, double rate, double seconds) {
  GeneratorSpec g;
  g.seed = seed;
  g.rate_per_s = rate;
  g.duration = static_cast<SimTime>(seconds * 1e9);
  g.input_min = 1000;
  g.input_max = 40000;
  g.output_min = 8;
  g.output_max = 64;
  Workload w = generate_workload(g);
  w.name = "gen";
  return w;
}

}  // namespace hisparse::sim
