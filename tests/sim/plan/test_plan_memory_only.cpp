// @brief `plan --limits memory`: concurrency set by caps and memory alone (the capacity question without the SLO),
// reproducible without hidden flag combinations.
#include <doctest/doctest.h>

#include "core/scenario_loader.h"
#include "sim/plan/capacity_plan.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("plan --limits memory: neither PCIe nor the SLO binds, and memory figures are the HBM arithmetic") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.max_running_requests = 0;
  PlanOptions all;
  all.seq_lens = {16384, 131072};
  PlanOptions mem = all;
  mem.memory_only = true;
  const MissCurves misses = default_miss_curves(s);
  const CapacityPlan a = compute_capacity_plan(s, all, misses);
  const CapacityPlan m = compute_capacity_plan(s, mem, misses);
  REQUIRE(a.rows.size() == m.rows.size());
  for (size_t i = 0; i < m.rows.size(); ++i) {
    const PlanRow& r = m.rows[i];
    CAPTURE(r.seq_len);
    CAPTURE(to_string(r.mode));
    CHECK(r.binding_limit != "slo");
    CHECK(r.binding_limit != "pcie");
    CHECK(r.max_per_rank >= a.rows[i].max_per_rank);
    if (r.mode == KvMode::kFull) {
      // Full KV: floor((max_total_num_tokens + R) / (paged seq_len + R)) with R = 512 reserved per request on this
      // PD decode server, whatever the step time.
      const auto pool = static_cast<int64_t>(m.budget.full_pool_tokens.value);
      CHECK(r.max_per_rank == (pool + 512) / (r.seq_len + 512));  // 16384 and 131072 are whole pages of 64
      CHECK(r.binding_limit == "hbm");
    }
  }
  bool warned = false;
  for (const auto& w : m.warnings) warned = warned || w.find("--limits memory") != std::string::npos;
  CHECK(warned);
}
