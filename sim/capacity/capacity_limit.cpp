// @brief The limit keys, their labels and tie-break order, and the binding limit (capacity_limit.h).
#include "sim/capacity/capacity_limit.h"

#include "core/error.h"

namespace hisparse::sim {

namespace {

const char* kLabels[] = {"max_running_requests cap", "HBM (device pool)", "logical pool (indexer keys, ratio)",
                         "host pool", "host DRAM", "PCIe / host IO within the SLO", "TPOT SLO (step time)"};

}  // namespace

const std::vector<std::string>& limit_keys() {
  static const std::vector<std::string> keys = {"max_running_requests", "hbm",  "logical_pool", "host_pool",
                                                "host_dram",            "pcie", "slo"};
  return keys;
}

std::vector<CapacityLimit> unset_limits() {
  std::vector<CapacityLimit> out;
  for (size_t i = 0; i < limit_keys().size(); ++i)
    out.push_back(CapacityLimit{limit_keys()[i], kLabels[i], -1, "does not apply"});
  return out;
}

CapacityLimit& find_limit(std::vector<CapacityLimit>& limits, const std::string& key) {
  for (auto& l : limits)
    if (l.key == key) return l;
  throw_error("capacity: unknown limit {}", key);
}

const CapacityLimit& find_limit(const std::vector<CapacityLimit>& limits, const std::string& key) {
  for (const auto& l : limits)
    if (l.key == key) return l;
  throw_error("capacity: unknown limit {}", key);
}

const CapacityLimit& binding_limit(const std::vector<CapacityLimit>& limits) {
  const CapacityLimit* best = nullptr;
  for (const auto& key : limit_keys())
    for (const auto& l : limits)
      if (l.key == key && l.per_rank >= 0 && (!best || l.per_rank < best->per_rank)) best = &l;
  if (!best) throw_error("capacity: no limit applies (the SLO limit always should)");
  return *best;
}

}  // namespace hisparse::sim
