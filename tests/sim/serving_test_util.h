// @brief What the serving-simulation tests share: the shipped node, one lone request, a seeded Poisson workload of
// mixed lengths.
#pragma once

#include <cstdint>

#include "core/scenario_loader.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

/// The shipped DeepSeek-V3.2 node (dsv32-8xh200-1tb), loaded once.
inline const Scenario& dsv32_node() {
  static const Scenario s = load_scenario("dsv32-8xh200-1tb");
  return s;
}

/// One request of `input` prompt and `output` tokens, arriving at 1 µs.
inline Workload one_request(int32_t input, int32_t output) {
  Workload w;
  w.name = "one";
  w.requests.push_back(RequestSpec{0, 1000, input, output});
  return w;
}

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
