// @brief `hisparse sweep` end to end on the local process pool: the same files for any --jobs, rows in grid order, a
// failing point reported with its parameters (exit 1) without losing the other rows, progress on stderr, and a
// request-sharded replay point equal to `hisparse replay` of the whole trace.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/apps/cli_test_util.h"

using namespace hisparse::test;
namespace fs = std::filesystem;

namespace {

const std::string kTrace = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled/default.hstrace";

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

/// CSV rows as column → value maps (no quoted commas in the cells these tests read).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const auto head = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < head.size() && i < cells.size(); ++i) row[head[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

/// The arguments joined by blanks (the scratch paths hold none).
template <class... A>
std::string fmt_args(const A&... a) {
  std::string s;
  ((s += std::string(a) + " "), ...);
  return s;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

}  // namespace

TEST_CASE("sweep cli: any --jobs writes the same table; a failed point is named, the others kept") {
  const fs::path dir = scratch_dir("sweep_cli");
  const fs::path grid = dir / "grid.yaml";
  {
    std::ofstream g(grid);
    g << "sweep: cli\nreplay_shard_requests: 1\njobs:\n"
         "  - name: cap\n    kind: plan\n"
         "    grid: {scenario: dsv32-8xh200-1tb, context: [32K], device_buffer_size: [1024, 4096]}\n"
         "  - name: rep\n    kind: replay\n    settings: {row_bytes: 656}\n"
         "    grid: {trace: " << kTrace << ", device_buffer_size: [2048], policy: [sglang-lru, fifo]}\n";
  }
  std::map<int, std::string> csv, json, md;
  for (int jobs : {1, 3}) {
    CAPTURE(jobs);
    const fs::path out = dir / ("out" + std::to_string(jobs));
    const Run r = run(fmt_args("sweep", grid.string(), "--out", out.string(), "--jobs", std::to_string(jobs)), dir);
    // Point 0 asks for a buffer below top_k 2048: it fails at run time, the sweep goes on and exits 1.
    CHECK(exit_code(r.status) == 1);
    CHECK(r.err.find("point 0 (job cap, kind=plan scenario=dsv32-8xh200-1tb context=32768 device_buffer_size=1024") !=
          std::string::npos);
    CHECK(r.err.find("1 of 4 points failed") != std::string::npos);
    CHECK(r.err.find("4/4 points done (6/6 work items, 1 failed)") != std::string::npos);
    // The final progress line; the ones before it (at most one a second) carry the ETA.
    CHECK(r.err.find("s elapsed, done\n") != std::string::npos);
    CHECK(r.out.find("## replay points (measured") != std::string::npos);
    csv[jobs] = slurp(out / "sweep.csv");
    json[jobs] = slurp(out / "sweep.json");
    md[jobs] = slurp(out / "sweep.md");
    CHECK(!fs::exists(out / "sweep.csv.tmp"));
  }
  CHECK(csv[1] == csv[3]);
  CHECK(json[1] == json[3]);
  CHECK(md[1] == md[3]);
  const auto rows = read_csv(csv[1]);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].at("status") == "failed");
  // The error cell is quoted (it holds commas): read it from the text.
  CHECK(csv[1].find("device_buffer_size (1024) must be no smaller than top_k (2048)\"\n") != std::string::npos);
  CHECK(rows[1].at("status") == "ok");
  CHECK(rows[1].at("basis") == "modelled");
  CHECK(std::stoll(rows[1].at("hisparse_max_concurrency")) > 0);
  CHECK(rows[2].at("policy") == "sglang-lru");
  CHECK(rows[3].at("policy") == "fifo");
  CHECK(json[1].find("\"failed\": 1") != std::string::npos);

  // The sharded replay point (2 shards of 1 request) against one `hisparse replay` of the whole trace.
  const fs::path rep = dir / "replay";
  const Run r = run(fmt_args("replay", "--trace", kTrace, "--buffer-sizes", "2048", "--policy", "sglang-lru,fifo",
                             "--row-bytes", "656", "--threads", "1", "--quiet", "--no-plots", "--out", rep.string()),
                    dir);
  REQUIRE(exit_code(r.status) == 0);
  const auto whole = read_csv(slurp(rep / "replay.csv"));
  REQUIRE(whole.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const auto& s = rows[2 + i];
    CHECK(s.at("requests") == "2");
    CHECK(s.at("selected") == whole[i].at("selected"));
    CHECK(s.at("misses") == whole[i].at("misses"));
    CHECK(s.at("h2d_bytes") == whole[i].at("h2d_bytes"));
    CHECK(s.at("hit_rate") == whole[i].at("hit_rate"));
    CHECK(s.at("misses_p50") == whole[i].at("misses_p50"));
    CHECK(s.at("misses_p99") == whole[i].at("misses_p99"));
    CHECK(s.at("fast_path_fraction") == whole[i].at("fast_path_fraction"));
  }
}

TEST_CASE("sweep cli: a bad grid fails before any work, naming file and key") {
  const fs::path dir = scratch_dir("sweep_cli_bad");
  const fs::path grid = dir / "bad.yaml";
  {
    std::ofstream g(grid);
    g << "sweep: bad\njobs:\n  - kind: plan\n    grid: {scenario: dsv32-8xh200-1tb, context: [32Q]}\n";
  }
  const Run r = run(fmt_args("sweep", grid.string(), "--out", (dir / "out").string()), dir);
  CHECK(exit_code(r.status) != 0);
  CHECK(r.err.find("bad.yaml: jobs[0].grid.context") != std::string::npos);
  CHECK(r.err.find("'32Q'") != std::string::npos);
  CHECK(!fs::exists(dir / "out" / "sweep.csv"));
  const Run none = run(fmt_args("sweep", (dir / "missing.yaml").string()), dir);
  CHECK(exit_code(none.status) != 0);
  CHECK(none.err.find("missing.yaml: no such grid file") != std::string::npos);
}

TEST_CASE("sweep cli: --out naming a file fails before any work") {
  const fs::path dir = scratch_dir("sweep_cli_outfile");
  {
    std::ofstream(dir / "taken") << "x";
  }
  const Run r = run(fmt_args("sweep", HISPARSE_SOURCE_DIR "/scenarios/sweeps/example.yaml", "--out",
                             (dir / "taken").string(), "--jobs", "1"),
                    dir);
  CHECK(exit_code(r.status) == 1);
  CHECK(r.err.find("taken (--out): exists and is not a directory") != std::string::npos);
  // Before the first point: no progress line was printed.
  CHECK(r.err.find("points done") == std::string::npos);
}

TEST_CASE("sweep cli: a sweep killed halfway resumes from its journal to the uninterrupted run's bytes") {
  const fs::path dir = scratch_dir("sweep_cli_resume");
  const fs::path grid = dir / "grid.yaml";
  {
    std::ofstream g(grid);
    g << "sweep: resume\nreplay_shard_requests: 1\njobs:\n"
         "  - name: cap\n    kind: plan\n"
         "    grid: {scenario: dsv32-8xh200-1tb, context: [32K, 64K, 128K], device_buffer_size: [4096, 8192]}\n"
         "  - name: rep\n    kind: replay\n    settings: {row_bytes: 656}\n"
         "    grid: {trace: " << kTrace << ", device_buffer_size: [2048], policy: [sglang-lru, fifo]}\n";
  }
  const fs::path whole = dir / "whole", cut = dir / "cut";
  REQUIRE(exit_code(run(fmt_args("sweep", grid.string(), "--out", whole.string(), "--jobs", "2", "--quiet"), dir).status) == 0);
  CHECK(!fs::exists(whole / "sweep.journal"));  // removed once the tables are written

  // Killed (SIGKILL, as a lost node or a wall-clock limit would) once 4 of its 10 work items are journaled.
  const Run killed = run(fmt_args("sweep", grid.string(), "--out", cut.string(), "--jobs", "2", "--quiet",
                                  "--stop-after", "4"),
                         dir);
  CHECK(exit_code(killed.status) != 0);
  CHECK(!fs::exists(cut / "sweep.csv"));
  const std::string journal = slurp(cut / "sweep.journal");
  CHECK(std::count(journal.begin(), journal.end(), '\n') == 5);  // the header and 4 items

  // Without --resume the finished work is not thrown away.
  const Run again = run(fmt_args("sweep", grid.string(), "--out", cut.string(), "--quiet"), dir);
  CHECK(exit_code(again.status) == 1);
  CHECK(again.err.find("pass --resume") != std::string::npos);
  // A changed grid does not resume another grid's journal.
  const fs::path other = dir / "other.yaml";
  {
    std::ofstream(other) << slurp(grid) << "# edited\n";
  }
  const Run wrong = run(fmt_args("sweep", other.string(), "--out", cut.string(), "--resume", "--quiet"), dir);
  CHECK(exit_code(wrong.status) == 1);
  CHECK(wrong.err.find("belongs to another sweep") != std::string::npos);

  const Run resumed = run(fmt_args("sweep", grid.string(), "--out", cut.string(), "--jobs", "2", "--resume"), dir);
  CHECK(exit_code(resumed.status) == 0);
  CHECK(resumed.err.find("--resume: 4 of 10 work items read back") != std::string::npos);
  for (const char* f : {"sweep.csv", "sweep.json", "sweep.md"}) {
    CAPTURE(f);
    CHECK(slurp(cut / f) == slurp(whole / f));
  }
  CHECK(!fs::exists(cut / "sweep.journal"));
}

TEST_CASE("sweep cli: a simulate point runs `hisparse simulate`'s run, dynamic residency included") {
  // Expected: each mode of the grid (dynamic too: the grid refused it before the sweep called run_simulate) gives the
  // row `hisparse simulate --mode M` at the same level reports: the same finished count, and tokens/s equal to the
  // summary's 6 significant digits (the sweep prints 3 decimals).
  const fs::path dir = scratch_dir("sweep_cli_simulate_modes");
  const fs::path grid = dir / "modes.yaml";
  {
    std::ofstream g(grid);
    g << "sweep: modes\njobs:\n  - name: serving\n    kind: simulate\n    settings: {num_requests: 4}\n"
         "    grid: {scenario: dsv32-8xh200-1tb, workload: synthetic_poisson, concurrency: [2], "
         "mode: [full, dynamic]}\n";
  }
  const fs::path out = dir / "out";
  const Run r = run(fmt_args("sweep", grid.string(), "--jobs", "1", "--out", out.string()), dir);
  CAPTURE(r.err);
  REQUIRE(exit_code(r.status) == 0);
  const auto rows = read_csv(slurp(out / "sweep.csv"));
  REQUIRE(rows.size() == 2);
  const char* modes[] = {"full", "dynamic"};
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(modes[i]);
    REQUIRE(rows[i].at("status") == "ok");
    CHECK(rows[i].at("mode") == modes[i]);
    const fs::path one = dir / (std::string("one_") + modes[i]);
    const Run s = run(fmt_args("simulate", "--scenario", "dsv32-8xh200-1tb", "--workload", "synthetic_poisson",
                               "--mode", modes[i], "--concurrency", "2", "--num-requests", "4", "--timeline-length",
                               "0", "--out", one.string()),
                      dir);
    REQUIRE(exit_code(s.status) == 0);
    const std::string summary = slurp(one / (std::string("summary_") + modes[i] + "_none.json"));
    CHECK(summary.find("\"finished\": " + rows[i].at("finished") + ",") != std::string::npos);
    const size_t at = summary.find("\"tokens_per_s\": ");
    REQUIRE(at != std::string::npos);
    const double cli_tokps = std::stod(summary.substr(at + 16));
    const double sweep_tokps = std::stod(rows[i].at("tokens_per_s"));
    CHECK(sweep_tokps > 0);
    CHECK(std::abs(sweep_tokps - cli_tokps) <= 1e-5 * cli_tokps + 5e-4);
  }
}
