// @brief check_pools and the C4 release table (sim/capacity/pool_check.h, c4_release.h): sglang PR #28752's start-up
// failure and issue #30401's prompt cap are found on the deployments that reproduce them and not on the same
// deployments under engine_version sglang-main; every figure is derived here from the memory budget's own figures.
#include <doctest/doctest.h>

#include <string>

#include "core/dsv4_pool_budget.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/capacity/c4_release.h"
#include "sim/capacity/pool_check.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const PoolCapacity* pool_named(const PoolCheck& c, const std::string& name) {
  for (const PoolCapacity& p : c.pools)
    if (p.pool == name) return &p;
  return nullptr;
}

bool has_problem(const PoolCheck& c, const std::string& pool) {
  for (const CheckProblem& p : c.problems)
    if (p.pool == pool) return true;
  return false;
}

}  // namespace

TEST_CASE("#28752: budgeting the indexer once while allocating it × ratio cannot start; the fixed rule can") {
  const Scenario s = load_scenario("dsv32-8xh200-before-28752");
  REQUIRE(s.deployment.engine_version == "sglang-before-28752");
  const MemoryBudget b = compute_memory_budget(s, {});
  // Expected, by hand: the old configurator sizes the pool with the indexer once, the pool allocates it × ratio.
  const double L = b.kv_layers.value, row = b.latent_row_bytes.value, Li = b.indexer_cache_layers.value,
               idx = b.indexer_key_bytes.value, budget = b.kv_budget_bytes.value;
  const int ratio = s.deployment.hisparse.host_to_device_ratio;
  REQUIRE(ratio > 1);
  const int64_t sized = pool_tokens(budget, L * row + Li * idx, b.page_size);
  const double alloc = static_cast<double>(sized) * (L * row + ratio * Li * idx);
  REQUIRE(alloc > budget);
  const PoolCheck c = check_pools(s, 0, 0);
  REQUIRE(has_problem(c, "indexer"));
  const std::string& msg = c.problems.front().message;
  CAPTURE(msg);
  CHECK(msg.find(formula_number(alloc)) != std::string::npos);                        // the figure
  CHECK(msg.find("engine_version: sglang-main") != std::string::npos);                // the fix
  CHECK(msg.find(std::to_string(static_cast<int64_t>(b.device_pool_tokens.value))) != std::string::npos);

  // Expected: the same node on the fixed rule allocates exactly what it budgets, so nothing is found.
  Scenario fixed = s;
  fixed.deployment.engine_version = "sglang-main";
  CHECK(check_pools(fixed, 0, 0).problems.empty());
  // Expected: ratio 1 allocates the indexer once, as the old rule budgets it: no start-up problem either.
  Scenario one = s;
  one.deployment.hisparse.host_to_device_ratio = 1;
  CHECK_FALSE(has_problem(check_pools(one, 0, 0), "indexer"));
}

TEST_CASE("#30401: v0.5.14 caps a HiSparse DeepSeek-V4 prompt at the sliding-window pool; the full pool holds it") {
  const Scenario s = load_scenario("dsv4-flash-8xh100-v0514");
  const int64_t prompt = 512000, total = 512000 + 10240;
  const MemoryBudget b = compute_memory_budget(s, {});
  const int page = b.page_size;
  // Expected, by hand: the window pool is smaller than the paged prompt, the logical (full) pool larger than the request.
  REQUIRE(b.hisparse_swa_pool_tokens.value < static_cast<double>(round_up_to_page(prompt, page)));
  REQUIRE(b.logical_pool_tokens.value >= static_cast<double>(round_up_to_page(total, page)));
  const PoolCheck c = check_pools(s, prompt, total);
  CHECK(has_problem(c, "SWA"));
  CHECK_FALSE(has_problem(c, "logical"));
  const PoolCapacity* swa = pool_named(c, "SWA");
  REQUIRE(swa != nullptr);
  CHECK(swa->need == round_up_to_page(prompt, page));
  CHECK(swa->capacity == static_cast<int64_t>(b.hisparse_swa_pool_tokens.value));

  // Expected: on sglang-main a request keeps only window + page tokens of the window pool, so nothing is found.
  Scenario fixed = s;
  fixed.deployment.engine_version = "sglang-main";
  const PoolCheck f = check_pools(fixed, prompt, total);
  CAPTURE(pool_check_text(f));
  CHECK(f.problems.empty());
  // Expected: a prompt over the logical pool is found on any version, naming the pool.
  const int64_t over = static_cast<int64_t>(b.logical_pool_tokens.value) + 1;
  CHECK(has_problem(check_pools(fixed, over, over), "logical"));
}

TEST_CASE("every pool is reported on its own: logical, host, device, indexer (MLA) and C4, SWA (DeepSeek-V4)") {
  const PoolCheck mla = check_pools(load_scenario("dsv32-8xh200-1tb"), 0, 0);
  for (const char* p : {"device", "logical", "host", "indexer"}) {
    CAPTURE(p);
    CHECK(pool_named(mla, p) != nullptr);
  }
  const PoolCheck v4 = check_pools(load_scenario("dsv4-flash-8xh100"), 0, 0);
  for (const char* p : {"logical", "SWA", "C4 device", "C4 host", "C4 indexer"}) {
    CAPTURE(p);
    CHECK(pool_named(v4, p) != nullptr);
  }
}

TEST_CASE("#33979: the circular C4 rule releases less than the ratio promises; the request-capacity rule does not vary") {
  const Scenario s = load_scenario("dsv4-pro-8xb200");
  const auto rows = c4_release_by_ratio(s, {1, 2, 5});
  REQUIRE(rows.size() == 3);
  // Expected: ratio 1 releases nothing under the circular rule (C4 device = full / 4 as with HiSparse off).
  CHECK(rows[0].circular_released == doctest::Approx(0).epsilon(1e-9).scale(1e9));
  for (size_t i = 1; i < rows.size(); ++i) {
    CAPTURE(rows[i].ratio);
    // Expected: the full pool grows into the freed memory, so the C4 pool shrinks by less than the ratio.
    CHECK(rows[i].circular_full_tokens > rows[0].circular_full_tokens);
    CHECK(rows[i].circular_released > 0);
    CHECK(rows[i].circular_released < rows[i].expected_released);
    // Expected: the request-capacity pool is (M + 1) × (H + page / 4) entries at every ratio.
    REQUIRE(rows[i].request_capacity);
    CHECK(rows[i].rc_c4_bytes == doctest::Approx(rows[0].rc_c4_bytes));
  }
}
