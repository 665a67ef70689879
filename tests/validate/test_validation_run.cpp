// @brief The validation library without the CLI: a request runs the chosen operations through the reference and a
// device backend and returns their rows; a bad request is named before any case runs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "validate/validate.h"

using namespace hisparse;
using namespace hisparse::validation;

namespace {

std::string error_of(const ValidateRequest& r) {
  try {
    run_validation(r);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("validation run: the cpu harness check returns one passing row per variant of the chosen operations") {
  ValidateRequest r;
  r.backend = "cpu";
  r.options.cases = 3;
  r.options.seed = 4;
  r.options.only = {"topk", "gather"};
  std::vector<std::string> banner;
  const ValidateResult got = run_validation(r, [&](const std::string& line) { banner.push_back(line); });
  MESSAGE("the reference against itself cannot differ; only the chosen operations appear, in table order");
  REQUIRE(!got.reports.empty());
  CHECK(got.passed());
  CHECK(got.mismatches == 0);
  int64_t cases = 0;
  for (const auto& row : got.reports) {
    CHECK((row.op == "gather" || row.op == "topk"));
    cases += row.cases;
  }
  CHECK(got.cases == cases);
  CHECK(got.cases > 0);
  CHECK(got.reports.front().op == "gather");  // validate_ops() lists gather before topk
  MESSAGE("the banner names the backend and the seed, as the CLI prints it");
  REQUIRE(banner.size() == 2);
  CHECK(banner[0] == "validate: cpu reference vs cpu reference (harness check)");
  CHECK(banner[1].rfind("seed 4, 3 random cases per operation", 0) == 0);
}

TEST_CASE("validation run: a bad request is named before any case runs") {
  ValidateRequest r;
  r.backend = "cpu";
  r.options.only = {"nonsense"};
  CHECK(error_of(r) == "--only nonsense: unknown operation (see hisparse validate --help)");
  r.options.only.clear();
  r.options.cases = -1;
  CHECK(error_of(r) == "--cases -1: expected >= 0");
  r.options.cases = 1;
  r.backend = "tpu";
  CHECK(error_of(r) == "--backend tpu: expected cuda or cpu");
}

TEST_CASE("validation run: swap-in-v2 runs its random cases and both trace sizes through the cpu harness") {
  // The harness check of the V2 operation: the reference against itself over random states and a generated trace
  // (one row per trace buffer size: the smallest power of two >= max(K, 64), and twice that).
  ValidateRequest r;
  r.backend = "cpu";
  r.options.cases = 40;
  r.options.seed = 3;
  r.options.trace = "gen:tiny";
  r.options.trace_steps = 20;
  r.options.only = {"swap-in-v2"};
  const ValidateResult got = run_validation(r);
  REQUIRE(got.reports.size() == 3);
  CHECK(got.reports[0].variant == "random");
  CHECK(got.reports[0].cases == 40);
  CHECK(got.reports[1].variant.rfind("trace H=", 0) == 0);
  CHECK(got.reports[2].cases == 20);
  CHECK(got.passed());
}
