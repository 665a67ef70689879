// @brief The simulated server's admission pools from the memory budget (admission_pools.h).
#include "sim/capacity/admission_pools.h"

namespace hisparse::sim {

AdmissionPools admission_pools(const MemoryBudget& b, bool hisparse, int tokens_per_entry) {
  AdmissionPools p;
  if (!hisparse) {
    p.logical = static_cast<int64_t>(b.full_pool_tokens.value);
    return p;
  }
  p.device = static_cast<int64_t>(b.device_pool_tokens.value) * tokens_per_entry;
  p.logical = static_cast<int64_t>(b.logical_pool_tokens.value);
  p.host = static_cast<int64_t>(b.host_pool_tokens.value) * tokens_per_entry;
  return p;
}

}  // namespace hisparse::sim
