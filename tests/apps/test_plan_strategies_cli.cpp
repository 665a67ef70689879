// @brief `hisparse plan --strategies` end to end: the five cache strategies side by side in stdout and plan.json,
// recall "not measured" without a selection study, and the sub-flags refused without --strategies.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

TEST_CASE("plan --strategies: every strategy in stdout and plan.json; sub-flags need --strategies") {
  const fs::path dir = hisparse::test::scratch_dir("plan_strategies");
  const std::string out = (dir / "out").string();
  const Run r = run("plan --scenario dsv32-8xh200-1tb --seq-lens 32K --strategies --no-plots --out " + out, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  for (const char* s : {"full KV", "HiSparse", "eviction", "logical masking", "compression"}) {
    CAPTURE(s);
    CHECK(r.out.find(s) != std::string::npos);
  }
  CHECK(r.out.find("not measured") != std::string::npos);
  const std::string json = slurp(fs::path(out) / "plan.json");
  CHECK(json.find("\"strategies\"") != std::string::npos);
  const Run bad = run("plan --scenario dsv32-8xh200-1tb --eviction-budget 4096 --no-plots --out " + out, dir);
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--strategies") != std::string::npos);
}
