// @brief The plots read well and fail cleanly (issue 40): a full disk while plotting gives one line naming the PNG
// (not a matplotlib traceback) and the command's own line, exit non-zero, the data files kept; legends of
// replay_misses.png and the Pareto panels sit outside the axes; log axes read 8, 16, 32 and 60, not 2^3 and 6x10^1.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

using namespace hisparse::test;
namespace fs = std::filesystem;

namespace {

int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

const std::string kTrace = HISPARSE_SOURCE_DIR "/traces/bundled/default.hstrace";

/// Runs a Python snippet with the plot scripts importable; returns its exit status, its output in `out`.
int python(const std::string& code, const fs::path& dir, std::string* out) {
  const fs::path script = dir / "check.py", log = dir / "check.txt";
  std::ofstream(script) << "import sys\nsys.path.insert(0, '" HISPARSE_SOURCE_DIR "/scripts')\n"
                        << "import matplotlib\nmatplotlib.use('Agg')\n"
                        << code;
  const int status = std::system(("/usr/bin/python3 " + script.string() + " > " + log.string() + " 2>&1").c_str());
  *out = slurp(log);
  return status;
}

}  // namespace

TEST_CASE("plots: a full disk while plotting is one line naming the PNG, then the command's line, exit 1") {
  if (!fs::exists("/dev/full")) return;  // the stand-in for a full disk: every write fails with ENOSPC
  const fs::path dir = scratch_dir("plot_disk_full");
  const fs::path out = dir / "out";
  fs::create_directories(out);
  // The first PNG's temporary file is /dev/full: its write fails as on a full disk.
  fs::create_symlink("/dev/full", out / "replay_hit_rate.png.tmp.png");
  const Run r = run("replay --trace " + kTrace + " --buffer-sizes 2048 --policy sglang-lru --quiet --out " +
                        out.string(),
                    dir);
  CHECK(exit_status(r.status) == 1);
  // One line from the script, naming the file and the cause; no traceback.
  CHECK(r.err.find("plot_replay.py: " + (out / "replay_hit_rate.png").string() +
                   ": cannot write it: No space left on device\n") != std::string::npos);
  CHECK(r.err.find("Traceback") == std::string::npos);
  // Then the command's own line: which step failed, that the data is written, how to skip the plots.
  CHECK(r.err.find("replay: plotting into " + out.string() + " failed: plot_replay.py exited with status 1") !=
        std::string::npos);
  CHECK(r.err.find("--no-plots skips the plots") != std::string::npos);
  // Two lines in all: the script's and the command's.
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);
  CHECK(fs::exists(out / "replay.json"));
  CHECK_FALSE(fs::exists(out / "replay_hit_rate.png"));
}

TEST_CASE("plots: log axes are labelled in plain numbers, base 2 and base 10 alike") {
  const fs::path dir = scratch_dir("plot_ticks");
  std::string out;
  // A base-2 axis over 8..64 (sweep.png's clients) and a base-10 axis over 40..90 (a TPOT axis: minor ticks
  // labelled, where matplotlib writes 6x10^1).
  const int status = python(R"(
import matplotlib.pyplot as plt
from plot_output import plain_log_ticks
fig, (a, b) = plt.subplots(1, 2)
a.plot([8, 16, 32, 64], [1, 2, 3, 4]); a.set_xscale("log", base=2); plain_log_ticks(a, "x")
b.plot([1, 2], [40, 90]); b.set_yscale("log"); plain_log_ticks(b, "y")
fig.canvas.draw()
print("x", [t.get_text() for t in a.get_xticklabels() if t.get_text()])
print("y", [t.get_text() for t in b.get_yticklabels(minor=True) if t.get_text()])
)",
                            dir, &out);
  REQUIRE(status == 0);
  CHECK(out.find("'8', '16', '32', '64'") != std::string::npos);
  CHECK(out.find("'60'") != std::string::npos);
  CHECK(out.find("mathdefault") == std::string::npos);
  CHECK(out.find("times") == std::string::npos);
}

TEST_CASE("plots: no legend of replay_misses.png or the advise Pareto panels lies over any panel") {
  const fs::path dir = scratch_dir("plot_legends");
  const fs::path rep = dir / "rep", adv = dir / "adv";
  REQUIRE(run("replay --trace " + kTrace + " --buffer-sizes 2048,4096,8192 --policy sglang-lru,belady --quiet "
              "--no-plots --out " + rep.string(), dir).status == 0);
  REQUIRE(run("advise --scenario dsv32-8xh200-1tb --seq-lens 32K --no-plots --out " + adv.string(), dir).status == 0);
  // Each figure is caught instead of saved, drawn, and every legend's box compared with its axes' box.
  std::string out;
  const int status = python(R"(
import json, os
import plot_replay, plot_advise
figs = []
plot_replay.save = lambda fig, path: figs.append(("replay_misses", fig))
plot_advise.save = lambda fig, out_dir, name: figs.append((name, fig))
plot_replay.plot_misses(json.load(open(")" + (rep / "replay.json").string() + R"(")), "unused")
doc = json.load(open(")" + (adv / "advise.json").string() + R"("))
plot_advise.plot_pareto(doc["advice"][0], doc["tpot_slo_ms"], "unused", 0)
covered = 0
for name, fig in figs:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    shown = [a for a in fig.axes if a.get_visible()]
    for ax in shown:
        leg = ax.get_legend()
        if leg is None:
            continue
        # Neither its own axes nor a neighbouring panel's.
        for other in shown:
            if leg.get_window_extent(r).overlaps(other.get_window_extent(r)):
                covered += 1
                print("covers:", name, ax.get_title(), "over", other.get_title())
print("figures", len(figs), "legends over axes", covered)
)",
                            dir, &out);
  CAPTURE(out);
  REQUIRE(status == 0);
  CHECK(out.find("figures 2 legends over axes 0") != std::string::npos);
}
