// @brief What the serving-simulation tests share: the shipped node, one lone request, a seeded Poisson workload of
// mixed lengths; the GLM-5.1 field load.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/scenario_loader.h"
#include "sim/serving/serving_simulation.h"
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

/// `n` requests of the same lengths, all arriving at 0.
inline Workload burst(int n, int32_t input, int32_t output) {
  Workload w;
  w.name = "burst";
  for (int i = 0; i < n; ++i) w.requests.push_back(RequestSpec{i, 0, input, output});
  return w;
}

/// The most requests any instance step decoded at once.
inline int32_t max_step_requests(const ServingResult& r) {
  int32_t m = 0;
  for (const auto& s : r.steps) m = std::max(m, s.requests);
  return m;
}

/// The field report's load on glm51-8xh200-tp8-r11 ("HiSparse host mem pool alloc failed"): four clients, eight
/// requests in all, prompts of 46,000 / 52,000 / 58,000 / 63,000 tokens with 3,000 output tokens each.
inline Workload glm_field_prompts() {
  Workload w;
  w.name = "glm-long";
  const int32_t prompts[4] = {46000, 52000, 58000, 63000};
  for (int i = 0; i < 4; ++i) w.requests.push_back(RequestSpec{i, 0, prompts[i], 3000});
  return w;
}
inline ServingOptions glm_field_clients(AdmissionCheck admission) {
  ServingOptions o;
  o.mode = KvMode::kHiSparse;
  o.clients.concurrency = 4;
  o.clients.requests = 8;
  o.admission = admission;
  return o;
}

}  // namespace hisparse::sim
