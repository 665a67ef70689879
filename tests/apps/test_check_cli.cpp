// @brief `hisparse check` end to end: it exits 1 naming the pool, the figure and the fix on the deployments that
// reproduce sglang #30401 (prompts over the window pool on v0.5.14) and PR #28752 (start-up under the old indexer
// sizing), exits 0 on the same deployments under engine_version sglang-main, and plan and advise refuse the failing
// ones before anything is planned.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;

TEST_CASE("check flags #30401's 512K prompts on v0.5.14 and passes them on sglang-main") {
  const fs::path dir = hisparse::test::scratch_dir("check_30401");
  const Run bad = run("check --scenario dsv4-flash-8xh100-v0514 --workload sglang_30401_512k", dir);
  CAPTURE(bad.out);
  CAPTURE(bad.err);
  // Expected: exit 1, the window pool named with the paged prompt (512,000 in pages of 256 = 512,000) and the fix.
  CHECK(WEXITSTATUS(bad.status) == 1);
  CHECK(bad.err.find("[SWA]") != std::string::npos);
  CHECK(bad.err.find("512,000 tokens of the SWA pool") != std::string::npos);
  CHECK(bad.err.find("engine_version: sglang-main") != std::string::npos);
  CHECK(bad.out.find("PROBLEM [SWA]") != std::string::npos);
  // Expected: the per-pool report and the C4 release table are printed either way.
  CHECK(bad.out.find("C4 device") != std::string::npos);
  CHECK(bad.out.find("#33979") != std::string::npos);
  // Expected: the shipped dsv4-flash-8xh100 node (sglang-main, max_running_requests 128) holds the same prompts.
  const Run good = run("check --scenario dsv4-flash-8xh100 --workload sglang_30401_512k", dir);
  CAPTURE(good.err);
  CHECK(good.status == 0);
  CHECK(good.out.find("check: no problem found") != std::string::npos);
}

TEST_CASE("check flags #28752's start-up failure; plan and advise refuse it before anything is planned") {
  const fs::path dir = hisparse::test::scratch_dir("check_28752");
  const Run bad = run("check --scenario dsv32-8xh200-before-28752", dir);
  CAPTURE(bad.err);
  // Expected: exit 1 naming the indexer, the PR and the fix.
  CHECK(WEXITSTATUS(bad.status) == 1);
  CHECK(bad.err.find("[indexer] cannot start under sglang-before-28752") != std::string::npos);
  CHECK(bad.err.find("PR #28752") != std::string::npos);
  CHECK(bad.err.find("--max-total-tokens") != std::string::npos);
  for (const std::string cmd : {"plan --scenario dsv32-8xh200-before-28752 --seq-lens 16K --no-plots --out ",
                                "advise --scenario dsv32-8xh200-before-28752 --seq-lens 16K --no-plots --out "}) {
    CAPTURE(cmd);
    const Run r = run(cmd + (dir / "out").string(), dir);
    CAPTURE(r.err);
    // Expected: non-zero exit, the check's message, and no report written.
    CHECK(r.status != 0);
    CHECK(r.err.find("pool problem(s) found before anything is simulated") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out" / "plan.json"));
    CHECK_FALSE(fs::exists(dir / "out" / "advise.json"));
  }
  // Expected: an unknown engine_version is refused naming the field, the value and the accepted names.
  const fs::path y = dir / "bad_version.yaml";
  {
    std::string yaml = hisparse::test::slurp(fs::path(HISPARSE_SOURCE_DIR) / "scenarios/deployments/dsv32-8xh200-1tb.yaml");
    yaml += "engine_version: sglang-9.9\n";
    std::ofstream(y) << yaml;
  }
  const Run unknown = run("check --scenario " + y.string(), dir);
  CAPTURE(unknown.err);
  CHECK(unknown.status != 0);
  CHECK(unknown.err.find("engine_version") != std::string::npos);
  CHECK(unknown.err.find("sglang-9.9") != std::string::npos);
  CHECK(unknown.err.find("sglang-before-28752") != std::string::npos);
}
