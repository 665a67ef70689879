// @brief Max-min fair sharing: the one solver that splits link capacities among concurrent flows.
#pragma once

#include <cstdint>
#include <vector>

namespace hisparse::sim {

/// One flow as the solver sees it: the links it crosses and its own rate cap.
struct MaxMinFlow {
  const int32_t* links = nullptr;  // [num_links] indices into the capacity array
  int32_t num_links = 0;
  double max_rate = 0;             // bytes/s the flow can never exceed on its own (0 = no cap)
};

/// Progressive filling: every flow's rate rises together until a link saturates or the flow reaches its own
/// cap; those flows freeze, the rest keep rising. The result is the unique max-min fair allocation.
///   capacity[c]: bytes/s of link c;  flows[f]: as above;  rates[f] (out): bytes/s given to flow f.
/// A flow with no links and no cap gets rate 0 (reported as a configuration error by callers).
void solve_max_min(const std::vector<double>& capacity, const std::vector<MaxMinFlow>& flows,
                   std::vector<double>& rates);

}  // namespace hisparse::sim
