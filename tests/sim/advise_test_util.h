// @brief What the advisor tests share: the shipped node with max_running_requests cleared (the advisor chooses it).
#pragma once

#include "core/scenario_loader.h"

namespace hisparse::sim {

inline Scenario bundled() {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.max_running_requests = 0;
  return s;
}

}  // namespace hisparse::sim
