// @brief Progressive filling for max-min fairness (as in SimGrid's LMM solver, without weights).
#include "sim/network/maxmin_solver.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace hisparse::sim {

void solve_max_min(const std::vector<double>& capacity, const std::vector<MaxMinFlow>& flows,
                   std::vector<double>& rates) {
  const size_t nc = capacity.size();
  const size_t nf = flows.size();
  rates.assign(nf, 0.0);
  std::vector<double> left(capacity);
  std::vector<int32_t> users(nc, 0);
  std::vector<char> fixed(nf, 0);
  size_t unfixed = 0;
  for (size_t f = 0; f < nf; ++f) {
    if (flows[f].num_links == 0 && !(flows[f].max_rate > 0)) { fixed[f] = 1; continue; }
    ++unfixed;
    for (int32_t i = 0; i < flows[f].num_links; ++i) ++users[flows[f].links[i]];
  }
  // Each round freezes at least one flow, so this ends after at most nf rounds.
  double level = 0;  // rate every unfixed flow has reached so far
  while (unfixed > 0) {
    double step = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < nc; ++c)
      if (users[c] > 0) step = std::min(step, left[c] / users[c]);
    for (size_t f = 0; f < nf; ++f)
      if (!fixed[f] && flows[f].max_rate > 0) step = std::min(step, flows[f].max_rate - level);
    if (step < 0) step = 0;
    level += step;
    for (size_t c = 0; c < nc; ++c)
      if (users[c] > 0) left[c] -= step * users[c];
    // Freeze flows on saturated links or at their cap. Relative tolerance absorbs the rounding of the
    // subtraction above; it only decides *which* flows freeze at this level, not their rate.
    std::vector<char> saturated(nc, 0);
    for (size_t c = 0; c < nc; ++c)
      saturated[c] = users[c] > 0 && left[c] <= 1e-9 * capacity[c];
    for (size_t f = 0; f < nf; ++f) {
      if (fixed[f]) continue;
      bool freeze = flows[f].max_rate > 0 && level >= flows[f].max_rate * (1 - 1e-12);
      for (int32_t i = 0; i < flows[f].num_links && !freeze; ++i) freeze = saturated[flows[f].links[i]];
      if (!freeze) continue;
      fixed[f] = 1;
      rates[f] = level;
      --unfixed;
      for (int32_t i = 0; i < flows[f].num_links; ++i) --users[flows[f].links[i]];
    }
  }
}

}  // namespace hisparse::sim
