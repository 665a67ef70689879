// @brief steady_window (see steady_window.h).
#include "sim/serving/steady_window.h"

#include <algorithm>
#include <map>

#include "sim/serving/serving_report.h"

namespace hisparse::sim {

SteadyWindow steady_window(const ServingResult& r) {
  SteadyWindow w;
  if (r.clients <= 0 || r.steps.empty()) return w;
  struct Span {
    SimTime begin = -1, end = 0;
    int64_t requests = 0;
  };
  std::map<int32_t, Span> by_instance;
  for (const StepRow& s : r.steps) {
    // in_flight counts requests sent and not finished, over the whole system, when the step started: equal to the
    // client count while every client is busy (think time 0; with think time a client between requests is idle).
    if (s.in_flight < r.clients || s.requests == 0) continue;
    Span& x = by_instance[s.instance];
    if (x.begin < 0) x.begin = s.start;
    x.end = std::max(x.end, s.end);
    x.requests += s.requests;
    ++w.steps;
  }
  if (w.steps == 0) return w;
  const double per_step = tokens_per_request_step(r) > 0 ? tokens_per_request_step(r) : 1.0;
  const int ranks_per_instance = std::max(1, r.ranks / std::max(1, r.decode_instances));
  int64_t requests = 0;
  for (const auto& [inst, x] : by_instance) {
    const double sec = static_cast<double>(x.end - x.begin) * 1e-9;
    if (sec > 0) w.tokens_per_s += static_cast<double>(x.requests) * per_step / sec;
    w.seconds = std::max(w.seconds, sec);
    requests += x.requests;
  }
  w.batch_per_rank = static_cast<double>(requests) / static_cast<double>(w.steps) / ranks_per_instance;
  return w;
}

}  // namespace hisparse::sim
