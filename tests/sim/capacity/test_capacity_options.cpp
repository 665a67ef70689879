// @brief The capacity model's options and its admission pools: with host_pools_must_fit (the advisor's choice) a
// setting whose host pools exceed host DRAM fits nothing, without it (the planner's) host DRAM bounds the requests as
// usual; --limits memory leaves PCIe and the SLO unapplied; simulate's admission pools are the budget's pools in
// engine tokens.
#include <doctest/doctest.h>

#include <cmath>

#include "core/scenario_loader.h"
#include "sim/capacity/admission_pools.h"
#include "sim/capacity/capacity.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("capacity: host pools larger than host DRAM fit nothing only when the option asks for the start-up check") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.max_running_requests = 0;
  const int64_t n = 16384;
  MemoryBudget b = compute_memory_budget(s, {n});
  // Host DRAM at 90% of what the host pools take per node: SGLang could not allocate them.
  s.deployment.host_dram_bytes = 0.9 * b.host_pool_bytes_per_node.value;
  b = compute_memory_budget(s, {n});
  const CostParams cost;
  const StepTimeModel model(s, cost, KvMode::kHiSparse, [](int64_t) { return 0.05; });
  CapacityOptions plan_like, advise_like;
  advise_like.host_pools_must_fit = true;
  const Capacity p = capacity_limits(s, b, ContextMix::single(n), KvMode::kHiSparse, model, plan_like);
  const Capacity a = capacity_limits(s, b, ContextMix::single(n), KvMode::kHiSparse, model, advise_like);
  // Expected without the check: floor(DRAM / GPUs per node / (paged n × kv_layers × row)), 8 GPUs per node, page 64.
  const double per_request = static_cast<double>(round_up_to_page(n, b.page_size)) * b.kv_layers.value * b.latent_row_bytes.value;
  const auto want = static_cast<int64_t>(std::floor(s.deployment.host_dram_bytes / 8 / per_request));
  REQUIRE(want > 0);
  CHECK(find_limit(p.limits, "host_dram").per_rank == want);
  // Expected with it: host_dram 0 binds, and the formula says why.
  CHECK(find_limit(a.limits, "host_dram").per_rank == 0);
  CHECK(a.per_rank == 0);
  CHECK(a.binding_limit == "host_dram");
  CHECK(find_limit(a.limits, "host_dram").formula.find("fail to start") != std::string::npos);
}

TEST_CASE("capacity: --limits memory applies neither PCIe nor the SLO") {
  Scenario s = load_scenario("dsv32-8xh200-1tb");
  s.deployment.max_running_requests = 0;
  const MemoryBudget b = compute_memory_budget(s, {131072});
  const CostParams cost;
  const StepTimeModel model(s, cost, KvMode::kHiSparse, [](int64_t) { return 0.05; });
  CapacityOptions o;
  o.memory_only = true;
  const Capacity c = capacity_limits(s, b, ContextMix::single(131072), KvMode::kHiSparse, model, o);
  CHECK(find_limit(c.limits, "pcie").per_rank == -1);
  CHECK(find_limit(c.limits, "slo").per_rank == -1);
  // Expected: the smallest memory limit binds.
  int64_t smallest = o.batch_cap;
  for (const char* key : {"hbm", "logical_pool", "host_pool", "host_dram"})
    smallest = std::min(smallest, find_limit(c.limits, key).per_rank);
  CHECK(c.per_rank == smallest);
}

TEST_CASE("capacity: simulate's admission pools are the budget's pools in engine tokens") {
  const Scenario s = load_scenario("dsv4-flash-8xh200");
  const MemoryBudget b = compute_memory_budget(s, {});
  // Expected: DeepSeek-V4's device and host pools count C4 entries of 4 tokens; the logical pool counts tokens.
  const AdmissionPools hs = admission_pools(b, true, 4);
  CHECK(hs.device == static_cast<int64_t>(b.device_pool_tokens.value) * 4);
  CHECK(hs.host == static_cast<int64_t>(b.host_pool_tokens.value) * 4);
  CHECK(hs.logical == static_cast<int64_t>(b.logical_pool_tokens.value));
  // Full KV: one pool of max_total_num_tokens, nothing apart.
  const AdmissionPools full = admission_pools(b, false, 4);
  CHECK(full.logical == static_cast<int64_t>(b.full_pool_tokens.value));
  CHECK(full.device == 0);
  CHECK(full.host == 0);
}
