// @brief Points a field file declares but the tool cannot score yet (`pending: "<reason>"`): read and checked like any
// other, kept out of the scored points, listed with their reason in every report (console, JSON, Markdown) and
// counted in the summary; nothing scored may be written on them. And the pool_tokens metric: the plan's token pool.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "sim/api/fidelity_request.h"
#include "sim/api/plan_request.h"
#include "sim/fidelity/fidelity_report.h"
#include "sim/fidelity/field_set.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

/// A field file named `stem`.yaml in a per-process folder, holding `body`.
std::string write_field(const std::string& stem, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / ("hisparse_pending_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / (stem + ".yaml");
  std::ofstream(path) << body;
  return path.string();
}

const char* kHead = R"(name: p
title: a run with a pending point
source:
  publication: "test"
  url: ""
  date: 2026-11-28
  quote: "none"
deployment: dsv32-8xh200-1tb
workload:
  input_tokens: 32768
  output_tokens: 2048
points:
  - id: pool
    metric: pool_tokens
    mode: full
    published: 1000000
    tolerance_pct: 5
  - id: later
    metric: tpot_ms
    mode: full
    concurrency: 1
    published: 26
    tolerance_pct: 10
)";

std::string load_error(const std::string& body) {
  try {
    load_field_run(write_field("p", body));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a pending point is read and checked but kept out of the scored points") {
  const FieldRun run = load_field_run(write_field("p", std::string(kHead) + "    pending: \"needs pp\"\n"));
  // Expect the scored point alone in points, the pending one apart with its reason.
  REQUIRE(run.points.size() == 1);
  CHECK(run.points[0].id == "pool");
  REQUIRE(run.pending.size() == 1);
  CHECK(run.pending[0].id == "later");
  CHECK(run.pending[0].pending == "needs pp");
  // Expect an empty reason refused, and a recorded error (something scored) on a pending point refused by name.
  CHECK(load_error(std::string(kHead) + "    pending: \"\"\n").find("empty reason") != std::string::npos);
  const std::string e = load_error(std::string(kHead) + "    recorded_error_pct: 1.0\n    pending: \"needs pp\"\n");
  CHECK(e.find("points[1].recorded_error_pct") != std::string::npos);
  CHECK(e.find("pending point is not scored") != std::string::npos);
  // Expect the pending point's own schema still checked (a max_concurrency point has no concurrency).
  const std::string bad = std::string(kHead) + "  - id: cap\n    metric: pool_tokens\n    mode: full\n    concurrency: 2\n"
                          "    published: 1\n    tolerance_pct: 5\n    pending: \"needs pp\"\n";
  CHECK(load_error(bad).find("omit concurrency") != std::string::npos);
}

TEST_CASE("every report lists a pending point with its reason; the scored one is the plan's token pool") {
  const std::string file = write_field("p", std::string(kHead) + "    pending: \"PP2 needs pipeline parallelism\"\n");
  FidelityRequest req;
  req.field = {file};
  req.simulate = false;
  req.fits = "none";
  const FidelityReport rep = run_fidelity(req);
  REQUIRE(rep.runs.size() == 1);
  REQUIRE(rep.runs[0].points.size() == 1);
  REQUIRE(rep.pending.size() == 1);
  CHECK(rep.pending[0].point.id == "later");
  // Expect pool_tokens to be the plan's full-KV pool per rank (max_total_num_tokens), as `plan` sizes it.
  PlanRequest q;
  q.setup.scenario = "dsv32-8xh200-1tb";
  q.seq_lens = {rep.runs[0].points[0].point.context};
  CHECK(rep.runs[0].points[0].plan == run_plan(q).plan.budget.full_pool_tokens.value);
  // Expect the console, JSON and Markdown to name the pending point and its reason, and the summary to count it.
  const std::string text = fidelity_console_text(rep);
  CHECK(text.find("p/later") != std::string::npos);
  CHECK(text.find("NOT SCORED: PP2 needs pipeline parallelism") != std::string::npos);
  CHECK(text.find("1 pending (declared, not scored") != std::string::npos);
  CHECK(fidelity_json(rep).find("\"reason\": \"PP2 needs pipeline parallelism\"") != std::string::npos);
  CHECK(fidelity_markdown(rep, false).find("later: pending, not scored: PP2 needs pipeline parallelism") !=
        std::string::npos);
  // Expect the pending point never among the checked ones (it has no recorded error and is not a failure).
  for (const std::string& f : check_failures(rep.runs)) CHECK(f.find("later") == std::string::npos);
}
