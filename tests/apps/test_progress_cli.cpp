// @brief Progress on stderr reaches logs: with stderr a file (not a terminal) it is on by default, a line per interval
// (10 s unless HISPARSE_PROGRESS_INTERVAL says), nothing for a run shorter than that; HISPARSE_PROGRESS=0 turns it off.
// Long work is estimated up front and refused past an hour without --force, the message naming both.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

using namespace hisparse::test;

namespace {

/// Sets an environment variable for the commands this test runs, and unsets it afterwards.
struct EnvVar {
  const char* name;
  EnvVar(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~EnvVar() { ::unsetenv(name); }
};

}  // namespace

TEST_CASE("progress: trace gen logs ETA lines and a final line when stderr is a file, stdout as before") {
  const auto dir = scratch_dir("progress_trace_gen");
  const std::string gen = "trace gen --preset tiny --out " + (dir / "t.hstrace").string();
  ::unsetenv("HISPARSE_PROGRESS");
  Run logged, brief, off, bad;
  {
    // Not a terminal, nothing forced: the log gets the lines (issue 40: a 100 s simulate left its log empty).
    // Interval 0 stands in for 10 s of work: a line per step record even in this short run.
    const EnvVar every("HISPARSE_PROGRESS_INTERVAL", "0");
    logged = run(gen, dir);
  }
  {
    const EnvVar never("HISPARSE_PROGRESS", "0"), every("HISPARSE_PROGRESS_INTERVAL", "0");
    off = run(gen, dir);
  }
  {
    const EnvVar every("HISPARSE_PROGRESS_INTERVAL", "soon");
    bad = run(gen, dir);
  }
  brief = run(gen, dir);
  REQUIRE(logged.status == 0);
  // tiny: 2 requests x 12 steps = 24 step records of 3 layers each. Whole lines (no carriage return) in a log.
  CHECK(logged.err.find("trace gen: 12/24 step records (3 layers each) (50 %), elapsed 0:00, ETA 0:00\n") !=
        std::string::npos);
  CHECK(logged.err.find("trace gen: 24/24 step records (3 layers each) done in 0:00\n") != std::string::npos);
  CHECK(logged.err.find('\r') == std::string::npos);

  // The default interval in a log is 10 s: this run of well under a second prints nothing, stdout is the same.
  REQUIRE(brief.status == 0);
  CHECK(brief.err.empty());
  CHECK(brief.out == logged.out);
  // HISPARSE_PROGRESS=0: nothing, whatever the interval.
  REQUIRE(off.status == 0);
  CHECK(off.err.empty());

  // A bad interval is refused, naming the variable and what it expects.
  CHECK(bad.status != 0);
  CHECK(bad.err.find("HISPARSE_PROGRESS_INTERVAL 'soon'") != std::string::npos);
}

TEST_CASE("work estimate: trace gen and simulate sizes that cannot finish are refused, naming the estimate and --force") {
  const auto dir = scratch_dir("work_estimate");
  // Issue 40's sizes. trace gen: 2^20 requests x 2^20 steps x 8 layers x top_k 2048 = 2^54 = 1.8e16 entries;
  // at millions of entries a second, years.
  const Run gen = run("trace gen --requests 1048576 --steps 1048576 --out " + (dir / "t.hstrace").string(), dir);
  CHECK(gen.status != 0);
  CHECK(gen.err.find("trace gen: estimated 1,048,576 requests × 1,048,576 steps × 8 layers × top_k 2048 = 1.8e+16 "
                     "entries") != std::string::npos);
  CHECK(gen.err.find("years (rate measured") != std::string::npos);
  CHECK(gen.err.find("pass --force to run it anyway") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "t.hstrace"));

  // simulate --concurrency 1000000: 4,000,000 requests per mode (4 per client), two modes by default.
  const Run sim = run("simulate --scenario dsv32-8xh200-1tb --workload mooncake_conversation --concurrency 1000000 "
                      "--out " + (dir / "sim").string(), dir);
  CHECK(sim.status != 0);
  CHECK(sim.err.find("simulate: estimated 8,000,000 requests decoding ") != std::string::npos);
  CHECK(sim.err.find("over 2 run(s), about ") != std::string::npos);
  CHECK(sim.err.find("Refused: more than the 1:00:00 a command runs without --force") != std::string::npos);
  // Refused before any output: the directory was not made.
  CHECK(!std::filesystem::exists(dir / "sim"));

  // A sweep whose grid holds such a point is refused the same way, before any item runs.
  {
    std::ofstream g(dir / "grid.yaml");
    g << "sweep: big\njobs:\n  - kind: simulate\n    settings: {num_requests: 8000000}\n"
         "    grid: {scenario: dsv32-8xh200-1tb, workload: mooncake_conversation, concurrency: [1000000]}\n";
  }
  const Run sweep = run("sweep " + (dir / "grid.yaml").string() + " --jobs 1 --out " + (dir / "sw").string(), dir);
  CHECK(sweep.status != 0);
  CHECK(sweep.err.find("sweep: estimated 1 work item to compute, 1 at a time, about ") != std::string::npos);
  CHECK(sweep.err.find("pass --force to run it anyway") != std::string::npos);
  CHECK(sweep.err.find("points done") == std::string::npos);

  // A small run says nothing up front (under the 10 s a log's progress line waits for).
  const Run small = run("trace gen --preset tiny --out " + (dir / "tiny.hstrace").string(), dir);
  CHECK(small.status == 0);
  CHECK(small.err.find("estimated") == std::string::npos);
}
