// @brief run_simulate (sim/api/simulate_outcome.h), the library call of `hisparse simulate`: the runs are listed in
// the CLI's order, each is the one-run `simulate` of the same set-up, a sweep's table holds a row per level and mode,
// the hooks see every run and keep_results false frees what the files were written from, and bad requests are
// refused before anything runs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "sim/api/simulate_outcome.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

SimulateRequest closed_loop(const std::string& mode, std::vector<int32_t> levels) {
  SimulateRequest r;
  r.setup.scenario = "dsv32-8xh200-1tb";
  r.setup.require_sparse_indexer = true;
  r.workload = "synthetic_poisson";
  r.mode = mode;
  r.concurrency = std::move(levels);
  r.num_requests = 4;
  r.timeline_length_s = 0;
  r.check_work = false;
  return r;
}

}  // namespace

TEST_CASE("run_simulate: one run per mode in the CLI's order, each the one-run simulate of the same set-up") {
  // Expected: mode "all" lists full, hisparse, dynamic (tags <mode>_<overlap>); each run's figures equal a separate
  // `simulate` call of a freshly loaded set-up with the same clients (the run is deterministic).
  const SimulateRequest req = closed_loop("all", {2});
  const SimulateOutcome out = run_simulate(req);
  REQUIRE(out.runs.size() == 3);
  CHECK(out.runs[0].tag == "full_none");
  CHECK(out.runs[1].tag == "hisparse_none");
  CHECK(out.runs[2].tag == "dynamic_none");
  CHECK_FALSE(out.sweep);
  const SimulationSetup setup = load_simulation(req);
  for (const SimulateRun& run : out.runs) {
    CAPTURE(run.tag);
    CHECK(run.done);
    CHECK(run.clients.concurrency == 2);
    CHECK(run.clients.requests == 4);
    const ServingResult again = simulate(setup, run.mode, run.overlap, run.clients);
    CHECK(run.result.finished == again.finished);
    CHECK(run.result.makespan == again.makespan);
    CHECK(run.summary_json == summary_json(again, setup.scenario));
  }
  // report.json holds the three summaries in order.
  const std::string report = simulate_report_json(out);
  CHECK(report.rfind("{\n\"scenario\": \"dsv32-8xh200-1tb\",\n", 0) == 0);
  CHECK(report.find(out.runs[2].summary_json + "\n]\n}\n") != std::string::npos);
}

TEST_CASE("run_simulate: several levels are a sweep; hooks see each run; keep_results false frees the results") {
  // Expected: levels 1 and 2 in mode both give 4 runs (level-major) and a sweep row for each, in order; the hook is
  // called once per run with its result still there; afterwards the results are empty but the summaries stay.
  const SimulateRequest req = closed_loop("both", {1, 2});
  SimulateHooks hooks;
  hooks.keep_results = false;
  std::vector<int64_t> finished_in_hook;
  int64_t last_progress = 0;
  hooks.on_progress = [&](int64_t done) { last_progress = done; };
  hooks.on_run = [&](const SimulateOutcome&, SimulateRun& run) { finished_in_hook.push_back(run.result.finished); };
  const SimulateOutcome out = run_simulate(req, hooks);
  REQUIRE(out.sweep);
  REQUIRE(out.sweep->points.size() == 4);
  const int32_t levels[] = {1, 1, 2, 2};
  const KvMode modes[] = {KvMode::kFull, KvMode::kHiSparse, KvMode::kFull, KvMode::kHiSparse};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(out.sweep->points[i].concurrency == levels[i]);
    CHECK(out.sweep->points[i].mode == modes[i]);
    CHECK(out.sweep->points[i].finished == 4);
    CHECK(out.runs[i].result.requests.empty());
    CHECK(out.runs[i].summary.tpot_ms.count == 4);
  }
  CHECK(finished_in_hook == std::vector<int64_t>{4, 4, 4, 4});
  CHECK(last_progress == out.requests_total());
  CHECK(out.requests_total() == 16);
}

TEST_CASE("run_simulate: bad requests are refused before any run, naming the flag") {
  // Expected: each error names the field's flag and what was expected.
  SimulateRequest bad_mode = closed_loop("sometimes", {2});
  CHECK_THROWS_WITH_AS(prepare_simulate(bad_mode), doctest::Contains("--mode 'sometimes' is unknown"), Error);
  SimulateRequest descending = closed_loop("both", {4, 2});
  CHECK_THROWS_WITH_AS(prepare_simulate(descending), doctest::Contains("--concurrency"), Error);
  SimulateRequest open_loop = closed_loop("both", {});
  CHECK_THROWS_WITH_AS(prepare_simulate(open_loop), doctest::Contains("give --concurrency"), Error);
  SimulateRequest too_many = closed_loop("both", {2});
  too_many.num_requests = 100'000'001;
  CHECK_THROWS_WITH_AS(prepare_simulate(too_many), doctest::Contains("--num-requests 100000001"), Error);
}
