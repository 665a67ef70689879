// @brief Serving engine, dynamic residency (SGLang's hisparse_dynamic.py): resident requests step like full KV,
// demotions under device-pool pressure, the batch-level switch to the swap graph, and the counts in the outputs.
#include <doctest/doctest.h>

#include <string>

#include "core/scenario_loader.h"
#include "sim/serving/serving_report.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/serving_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

ServingResult run(const Scenario& sc, const Workload& w, KvMode mode) {
  ServingOptions opt;
  opt.mode = mode;
  return run_serving(sc, w, opt);
}

}  // namespace

TEST_CASE("dynamic residency: a lone request stays resident and steps exactly as full KV") {
  const Scenario& sc = dsv32_node();
  const Workload w = one_request(20000, 6);
  const ServingResult full = run(sc, w, KvMode::kFull);
  const ServingResult dyn = run(sc, w, KvMode::kDynamic);
  // Expected: the device pool holds its whole KV, so it is never demoted and every step runs the resident graph:
  // full KV's phases, no misses, the one-token backup beside the compute (too small to stall), so each step lasts
  // exactly as long as full KV's.
  REQUIRE(dyn.steps.size() == full.steps.size());
  for (size_t k = 0; k < dyn.steps.size(); ++k) {
    CHECK(dyn.steps[k].end - dyn.steps[k].start == full.steps[k].end - full.steps[k].start);
    CHECK(dyn.steps[k].swap_graph_ranks == 0);
    CHECK(dyn.steps[k].slowest.stall == 0);
  }
  CHECK(dyn.misses == 0);
  CHECK(dyn.demotions == 0);
  CHECK(dyn.swap_graph_steps == 0);
  CHECK(dyn.resident_graph_steps == static_cast<int64_t>(dyn.steps.size()));
  CHECK(dyn.backup_bytes > 0);  // the incremental host backup runs every step but the first
  CHECK(dyn.requests[0].residency == Residency::kResidentBacked);
  CHECK(dyn.requests[0].demoted_at_step == -1);
}

TEST_CASE("dynamic residency: a short device pool demotes the longest resident request and switches the graph") {
  Scenario sc = dsv32_node();
  // One rank (attention DP 1), so the requests share its device pool of 40,960 tokens: the 30K request alone grows
  // to its whole KV (30,016 tokens), then two 8K requests arrive (8,064 each when resident: 46,144 in all).
  sc.deployment.decode = InstanceSpec{1, 8, 8, 1, 8};
  sc.deployment.memory.device_pool_tokens = 40960;
  Workload w;
  w.name = "three";
  w.requests.push_back(RequestSpec{0, 1000, 30000, 60});
  w.requests.push_back(RequestSpec{1, 300'000'000, 8000, 40});
  w.requests.push_back(RequestSpec{2, 400'000'000, 8000, 40});
  const ServingResult r = run(sc, w, KvMode::kDynamic);
  // Expected: when the 8K requests' KV grows past their buffers the pool is short, so the longest resident request
  // (30K) is demoted to swap, releasing its KV beyond its buffer (H + one page), once (never promoted back); the 8K
  // ones stay resident; from then on every step of the rank runs the swap graph.
  REQUIRE(r.finished == 3);
  CHECK(r.demotions == 1);
  CHECK(r.requests[0].residency == Residency::kSwap);
  CHECK(r.requests[0].demoted_at_step > 0);
  CHECK(r.requests[1].residency == Residency::kResidentBacked);
  CHECK(r.requests[2].residency == Residency::kResidentBacked);
  const int64_t H = sc.deployment.hisparse.device_buffer_size, page = sc.deployment.page_size;
  CHECK(r.demoted_tokens >= 30016 - (H + page));
  CHECK(r.swap_graph_steps > 0);
  CHECK(r.resident_graph_steps > 0);
  // The swap-graph steps are one run: from the demotion until the demoted request finishes (no promotion back).
  int runs = 0;
  bool prev = false;
  for (const auto& s : r.steps) {
    CHECK(s.swap_graph_ranks == (s.swap_requests > 0 ? 1 : 0));
    const bool swap = s.swap_requests > 0;
    if (swap && !prev) ++runs;
    prev = swap;
  }
  CHECK(runs == 1);
}

TEST_CASE("dynamic residency under load: demotions counted in the summary and the per-step CSV, conservation holds") {
  Scenario sc = dsv32_node();
  sc.deployment.memory.device_pool_tokens = 60000;
  const Workload w = generated(7, 40, 6);
  for (OverlapMode ov : {OverlapMode::kNone, OverlapMode::kTwoBatch}) {
    CAPTURE(to_string(ov));
    ServingOptions opt;
    opt.mode = KvMode::kDynamic;
    opt.cost.overlap = ov;
    const ServingResult r = run_serving(sc, w, opt);  // throws if a conservation check fails
    // Expected: every request finishes; the 60K-token pool cannot hold the batch's full KV, so requests are demoted
    // (each at most once: never promoted back), some rank-steps run the swap graph (with misses) and, before the
    // pressure builds, some run the resident graph.
    CHECK(r.finished == static_cast<int64_t>(w.requests.size()));
    CHECK(r.demotions > 0);
    CHECK(r.demotions <= static_cast<int64_t>(w.requests.size()));
    CHECK(r.demoted_tokens > 0);
    CHECK(r.swap_graph_steps > 0);
    CHECK(r.resident_graph_steps > 0);
    CHECK(r.misses > 0);
    int64_t step_demotions = 0, swap_ranks = 0;
    for (const auto& s : r.steps) {
      step_demotions += s.demotions;
      swap_ranks += s.swap_graph_ranks;
      // A rank on the resident graph copies no misses: a step with no swap request has none.
      if (s.swap_requests == 0) CHECK(s.misses == 0);
    }
    CHECK(swap_ranks == r.swap_graph_steps);
    CHECK(step_demotions <= r.demotions);  // admissions may demote between steps too
    const std::string summary = summary_json(r, sc);
    CHECK(summary.find("\"dynamic_residency\": {\"demotions\": " + std::to_string(r.demotions)) != std::string::npos);
    const std::string steps = steps_csv(r);
    CHECK(steps.substr(0, steps.find('\n')).find(",swap_requests,demotions,swap_graph_ranks") != std::string::npos);
    const std::string reqs = requests_csv(r);
    CHECK(reqs.find(",swap,") != std::string::npos);
  }
}
