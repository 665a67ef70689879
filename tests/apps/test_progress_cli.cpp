// @brief Progress on stderr: forced on by HISPARSE_PROGRESS=1 it shows an ETA; by default (not a terminal) it is off.
#include <doctest/doctest.h>

#include <cstdlib>
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

TEST_CASE("progress: trace gen with progress forced on prints ETA lines and a final line to stderr, stdout as before") {
  const auto dir = scratch_dir("progress_trace_gen");
  const std::string gen = "trace gen --preset tiny --out " + (dir / "t.hstrace").string();
  // Interval 0: a line per step record, so even this short run shows one.
  Run on, off, bad;
  {
    const EnvVar force("HISPARSE_PROGRESS", "1"), every("HISPARSE_PROGRESS_INTERVAL", "0");
    on = run(gen, dir);
  }
  {
    const EnvVar force("HISPARSE_PROGRESS", "1"), every("HISPARSE_PROGRESS_INTERVAL", "soon");
    bad = run(gen, dir);
  }
  ::unsetenv("HISPARSE_PROGRESS");
  off = run(gen, dir);
  REQUIRE(on.status == 0);
  // tiny: 2 requests x 12 steps = 24 step records of 3 layers each.
  CHECK(on.err.find("trace gen: 12/24 step records (3 layers each) (50 %), elapsed 0:00, ETA 0:00\n") !=
        std::string::npos);
  CHECK(on.err.find("trace gen: 24/24 step records (3 layers each) done in 0:00\n") != std::string::npos);

  // Not a terminal and not asked for: no progress at all; stdout is the same either way.
  REQUIRE(off.status == 0);
  CHECK(off.err.find("trace gen:") == std::string::npos);
  CHECK(off.out == on.out);

  // A bad interval is refused, naming the variable and what it expects.
  CHECK(bad.status != 0);
  CHECK(bad.err.find("HISPARSE_PROGRESS_INTERVAL 'soon'") != std::string::npos);
}
