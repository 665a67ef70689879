// @brief One limit on the concurrent decode requests of a dp rank (a count cap, a pool, host DRAM, PCIe within the
// TPOT SLO, the SLO itself) with the formula that produced it, the fixed order in which ties bind, and the binding
// limit of a set. The capacity model (sim/capacity/capacity.h) fills them; plan rows and advice candidates print them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::sim {

/// One limit on concurrent requests per rank (per_rank = -1: does not apply to this mode).
struct CapacityLimit {
  std::string key;      // one of limit_keys()
  std::string label;
  int64_t per_rank = -1;
  std::string formula;  // symbols = numbers
};

/// The limit keys in tie-break order: when several limits are equal, the first one named here binds
/// (a count cap before memory, memory before bandwidth, PCIe before the SLO it causes).
const std::vector<std::string>& limit_keys();
/// Every limit of limit_keys(), labelled, none applying yet (per_rank −1): what the capacity model starts from.
std::vector<CapacityLimit> unset_limits();
/// The limit named `key` in `limits` (throws naming it when absent).
CapacityLimit& find_limit(std::vector<CapacityLimit>& limits, const std::string& key);
const CapacityLimit& find_limit(const std::vector<CapacityLimit>& limits, const std::string& key);
/// The binding limit of `limits` (smallest per_rank among those that apply; ties by limit_keys order).
const CapacityLimit& binding_limit(const std::vector<CapacityLimit>& limits);

}  // namespace hisparse::sim
