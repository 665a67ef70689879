// @brief DeepSeek-V4 through every command with no refusal (issue 42): info, plan with --strategies and dynamic
// residency, simulate (full KV, HiSparse and dynamic residency), advise (its dynamic-residency candidate), check and
// sweep, each on a shipped V4 deployment; the step's modelled V4 terms (mHC mixing, hash routing) are named as such.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;

namespace {
bool has(const std::string& text, const char* s) { return text.find(s) != std::string::npos; }
}  // namespace

TEST_CASE("DeepSeek-V4 cli: info") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_all_info");
  const Run r = run("info --scenario dsv4-pro-8xb200", dir);
  CAPTURE(r.err);
  // Expected: the V4 pools printed, exit 0.
  CHECK(r.status == 0);
  CHECK(has(r.out, "C4 device pool"));
}

TEST_CASE("DeepSeek-V4 cli: plan --strategies and the dynamic-residency rows") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_all_plan");
  const fs::path out = dir / "p";
  const Run r = run("plan --scenario dsv4-flash-8xh200 --seq-lens 16K,128K --strategies --no-plots --out " + out.string(),
                    dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  // Expected: every strategy has a row, the V4 note says what E and the rows count, and the step's modelled V4 terms
  // are labelled.
  for (const char* s : {"== cache strategies", "eviction E=2048", "logical masking", "compression c=4",
                        "DeepSeek-V4: eviction budget E = 2048 tokens", "mHC mixing", "modelled (roofline"}) {
    CAPTURE(s);
    CHECK(has(r.out, s));
  }
  // Expected: plan.json carries the dynamic-residency rows (one per length) and the strategies.
  const std::string json = hisparse::test::slurp(out / "plan.json");
  const size_t dyn = json.find("\"dynamic_residency\": [");
  REQUIRE(dyn != std::string::npos);
  CHECK(json.compare(dyn + 21, 2, "[]") != 0);  // not an empty array
  CHECK(has(json.c_str(), "\"strategy\": \"compression\""));
}

TEST_CASE("DeepSeek-V4 cli: simulate in every mode") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_all_simulate");
  for (const char* mode : {"full", "hisparse", "dynamic"}) {
    CAPTURE(mode);
    const Run r = run(std::string("simulate --scenario dsv4-flash-8xh200 --workload synthetic_poisson --mode ") + mode +
                          " --concurrency 4 --num-requests 8 --timeline-length 0 --out " + (dir / mode).string(),
                      dir);
    CAPTURE(r.err);
    // Expected: the run completes (exit 0).
    CHECK(r.status == 0);
  }
}

TEST_CASE("DeepSeek-V4 cli: advise evaluates dynamic residency and labels the modelled V4 terms") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_all_advise");
  const Run r = run("advise --scenario dsv4-pro-8xb200 --seq-lens 64K --no-plots --out " + (dir / "a").string(), dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  // Expected: the dynamic-residency candidate is reported (no "not evaluated" note), and mHC / hash routing are named
  // as modelled.
  CHECK(has(r.out, "dynamic residency"));
  CHECK_FALSE(has(r.out, "dynamic residency is not evaluated"));
  CHECK(has(r.out, "hash routing"));
}

TEST_CASE("DeepSeek-V4 cli: check and sweep") {
  const fs::path dir = hisparse::test::scratch_dir("dsv4_all_check_sweep");
  const Run c = run("check --scenario dsv4-flash-8xh200", dir);
  CAPTURE(c.err);
  // Expected: the shipped deployment starts and its pools are reported one by one.
  CHECK(c.status == 0);
  const fs::path grid = dir / "grid.yaml";
  std::ofstream(grid) << "sweep: v4\njobs:\n"
                         "  - name: cap\n    kind: plan\n"
                         "    grid: {scenario: dsv4-flash-8xh200, context: [32K, 128K]}\n"
                         "  - name: serve\n    kind: simulate\n    settings: {duration_s: 1}\n"
                         "    grid: {scenario: dsv4-flash-8xh200, workload: synthetic_poisson, host_to_device_ratio: [2]}\n";
  const Run s = run("sweep " + grid.string() + " --out " + (dir / "s").string(), dir);
  CAPTURE(s.err);
  // Expected: every point runs (exit 0).
  CHECK(s.status == 0);
}
