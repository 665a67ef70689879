// @brief Look-ups into a CapacityPlan shared by the planner tests: a row by (seq_len, mode), a limit by key.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "sim/plan/capacity_plan.h"

namespace hisparse::sim::test {

inline const PlanRow& plan_row(const CapacityPlan& p, int64_t n, KvMode m) {
  for (const auto& r : p.rows)
    if (r.seq_len == n && r.mode == m) return r;
  FAIL("no row for seq_len " << n);
  return p.rows.front();
}

inline int64_t plan_limit(const PlanRow& r, const std::string& key) {
  for (const auto& l : r.limits)
    if (l.key == key) return l.per_rank;
  FAIL("no limit " << key);
  return -2;
}

}  // namespace hisparse::sim::test
