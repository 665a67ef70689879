// @brief `hisparse simulate` enforces every DeepSeek-V4 pool (sim/capacity/admission_pools.h): the sliding-window,
// C128, C4 indexer and compress-state pools beside the logical and C4 pools; a burst on a deployment whose window pool
// is the smallest is admitted only as far as that pool holds, as the capacity model says.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/dsv4_pool_budget.h"
#include "core/memory_budget.h"
#include "sim/capacity/admission_pools.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("DeepSeek-V4 pools: what one request holds in each, by hand") {
  const Scenario sc = load_scenario("dsv4-flash-8xh200");  // page 256, window 128
  const int ring = dsv4_state_rows(sc.model).c4_ring;
  // Expected for 1,000 tokens: paged 1,024; window tokens paged(min(1000, 128 + 256)) = 512; C128 entries
  // ceil(1024 / 128) = 8; indexer entries 1024 / 4 = 256; state rows floor(512 / 128) × ring = 4 × ring.
  const Dsv4Pools n = dsv4_request_need(sc, 1000);
  CHECK(n.units[0] == 512);
  CHECK(n.units[1] == 8);
  CHECK(n.units[2] == 256);
  CHECK(n.units[3] == 4 * ring);
  // Expected: a model without compressed attention holds nothing in these pools, and none is enforced.
  CHECK_FALSE(dsv4_admission_pools(dsv32_node(), false).any());
}

TEST_CASE("DeepSeek-V4 pools: the ledger takes all or nothing and names the short pool") {
  Dsv4Pools sizes;
  sizes.units[0] = 1000; sizes.units[1] = 10; sizes.units[2] = 100; sizes.units[3] = 50;
  Dsv4PoolLedger ledger(sizes);
  Dsv4Pools need;
  need.units[0] = 400; need.units[1] = 2; need.units[2] = 20; need.units[3] = 10;
  // Expected: two requests fit (800 of 1,000 window tokens); a third is short of the window pool (index 0) only.
  CHECK(ledger.short_pool(need) == -1);
  ledger.take(1, need);
  ledger.take(2, need);
  CHECK(ledger.short_pool(need) == 0);
  CHECK(std::string(Dsv4Pools::name(0)) == "swa_pool");
  CHECK(ledger.never_fits(need) == -1);
  // Expected: freeing one makes room again; freeing an unknown owner changes nothing.
  ledger.release(1);
  ledger.release(99);
  CHECK(ledger.used(0) == 400);
  CHECK(ledger.short_pool(need) == -1);
  // Expected: a need over a pool's whole size can never fit.
  need.units[1] = 11;
  CHECK(ledger.never_fits(need) == 1);
}

TEST_CASE("simulate: the sliding-window pool binds a DeepSeek-V4 burst where the capacity model says") {
  Scenario sc = load_scenario("dsv4-flash-8xh200");
  sc.deployment.max_running_requests = 0;            // no cap: only the pools limit admission
  sc.deployment.memory.full_pool_tokens = 2'000'000;  // per GPU: the full pool, so the window pool is
  sc.deployment.swa_full_tokens_ratio = 0.01;         // floor(2e6 × 0.01 / 256) × 256 = 19,968 tokens
  // simulate's admission holds no PD decode reserve (SGLang's num_reserved_decode_tokens, which the capacity model
  // adds to every pool's need): without it both count the same requests.
  sc.deployment.num_reserved_decode_tokens = 0;
  const int32_t in = 1000, out = 200;  // long enough that every admitted request decodes together
  const Dsv4Pools pools = dsv4_admission_pools(sc, false);
  const Dsv4Pools need = dsv4_request_need(sc, in + out);
  const int64_t by_swa = pools.units[0] / need.units[0];
  // The capacity model's full-KV limit at this length, from the memory budget (core/dsv4_pool_budget.h).
  const MemoryBudget b = compute_memory_budget(sc, {in + out});
  const Dsv4RequestLimits lim = dsv4_request_limits(b, in + out, false);
  // Preconditions: the window pool is the smallest of the V4 pools for this request (the compress-state rows are
  // sized from the window pool, floor(swa / window) × ring, so they bind with it, not before), and far below the full
  // pool.
  REQUIRE(by_swa > 0);
  for (int k = 1; k <= 2; ++k) REQUIRE(pools.units[k] / std::max<int64_t>(1, need.units[k]) > by_swa);
  REQUIRE(pools.units[3] / need.units[3] >= by_swa);
  REQUIRE(static_cast<int64_t>(b.full_pool_tokens.value) / round_up_to_page(in + out, 256) > 2 * by_swa);
  // Expected: the capacity model's limit is the window pool's.
  CHECK(lim.hbm == by_swa);

  ServingOptions opt;
  opt.mode = KvMode::kFull;
  ServingResult probe = run_serving(sc, burst(1, in, out), opt);
  const int64_t ranks = probe.ranks;
  const Workload w = burst(static_cast<int>(ranks * by_swa + 2 * ranks), in, out);
  const ServingResult r = run_serving(sc, w, opt);
  // Expected: every request finishes (none is too large for an empty rank), but no step decodes more than the
  // window pool admits per rank, over the instance's ranks; and the pools did fill to that bound.
  CHECK(r.finished == static_cast<int64_t>(w.requests.size()));
  CHECK(r.rejected == 0);
  CHECK(max_step_requests(r) <= ranks * by_swa);
  CHECK(max_step_requests(r) >= ranks * by_swa - ranks);

  // Expected: with the shipped ratio the window pool no longer binds, and the same burst decodes at once.
  Scenario wide = sc;
  wide.deployment.swa_full_tokens_ratio = 0.8;
  const ServingResult all = run_serving(wide, w, opt);
  CHECK(max_step_requests(all) > ranks * by_swa);
}
