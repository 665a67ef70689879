// @brief Input the CLI used to take in silence or answer oddly (issue 40 items 4, 7, 9, 10 and its "also" list), now
// refused with the flag, the value and what was expected: an infinite SLO, a trace without steps, sizes and durations
// past what the simulator can hold, a device as a scenario, a model file that is not YAML (quoted, not printed
// whole), empty flag values, negative thread counts, and an output path that is one of the inputs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

namespace {

const std::string kTrace = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled/default.hstrace";
const std::string kSim = "simulate --scenario dsv32-8xh200-1tb --workload mooncake_conversation --no-plots ";

}  // namespace

TEST_CASE("--tpot-slo-ms inf or 1e15 is refused with the range and how to ask for no SLO (item 4)") {
  // Before: inf and 1e15 passed the "> 0" check, overflowed the step model's int64-ns clock and planned 0 requests
  // ("relax the SLO"), exit 0. The YAML's own range [0.01, 1e6] ms now applies to the flag too.
  const fs::path dir = hisparse::test::scratch_dir("refusals_slo");
  for (const char* slo : {"inf", "1e15"}) {
    CAPTURE(slo);
    const Run r = run(std::string("plan --scenario dsv32-8xh200-1tb --seq-lens 32K --no-plots --tpot-slo-ms ") + slo +
                          " --out " + (dir / "p").string(),
                      dir);
    CAPTURE(r.err);
    CHECK(r.status != 0);
    CHECK(r.err.find("--tpot-slo-ms") != std::string::npos);
    CHECK(r.err.find("expected a number of ms in [0.01, 1e6]; for no SLO give 1e6") != std::string::npos);
  }
  // 1e6 itself, "no SLO" in practice, plans a non-zero concurrency.
  const Run ok = run("plan --scenario dsv32-8xh200-1tb --seq-lens 32K --no-plots --tpot-slo-ms 1e6 --out " +
                         (dir / "p").string(),
                     dir);
  CAPTURE(ok.err);
  REQUIRE(ok.status == 0);
  CHECK(ok.out.find("   32768  full               0 ") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a trace whose requests have no step has no hit rate: refused, exit non-zero (item 7)") {
  // An .npy trace directory of one request with 0 steps (a [0, 2, 16] top-k array). Before: "hit rate 100.00 %",
  // exit 0 (0 / 0 read as a perfect hit rate).
  const fs::path dir = hisparse::test::scratch_dir("refusals_empty_trace");
  const fs::path trace = dir / "empty";
  fs::create_directories(trace);
  // .npy version 1.0: magic, version, header length (little-endian), a header padded to a multiple of 64 bytes with
  // '\n' last.
  auto write_npy = [](const fs::path& p, const std::string& shape) {
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': " + shape + ", }";
    const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;  // magic 6 + version 2 + length 2, then 64-aligned
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream out(p, std::ios::binary);
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header;
  };
  write_npy(trace / "req_0_topk.npy", "(0, 2, 16)");
  write_npy(trace / "req_0_seq_lens.npy", "(0,)");
  const Run r = run("replay --trace " + trace.string() + " --buffer-sizes 32 --policy sglang-lru --quiet", dir);
  CAPTURE(r.out);
  CAPTURE(r.err);
  CHECK(r.status != 0);
  CHECK(r.err.find("has no decode step") != std::string::npos);
  CHECK(r.err.find("the hit rate is undefined") != std::string::npos);
  CHECK(r.out.find("100.00%") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sizes, durations and paths past what can run are named with the flag and the range (item 9)") {
  const fs::path dir = hisparse::test::scratch_dir("refusals_ranges");
  // 10^12 requests: std::bad_alloc before. Refused up front with the range and why it is bounded.
  const Run n = run(kSim + "--concurrency 4 --num-requests 1000000000000 --out " + (dir / "s").string(), dir);
  CAPTURE(n.err);
  CHECK(n.status != 0);
  CHECK(n.err.find("--num-requests 1000000000000: expected an integer in [1, 100000000]") != std::string::npos);
  CHECK(n.err.find("bad_alloc") == std::string::npos);
  // 1e30 s: "no request arrives within --duration 1e+30 s" before (1e39 ns overflowed the clock).
  const Run d = run(kSim + "--duration 1e30 --out " + (dir / "s").string(), dir);
  CAPTURE(d.err);
  CHECK(d.status != 0);
  CHECK(d.err.find("--duration 1e+30: expected seconds in [0, 1e+09]") != std::string::npos);
  CHECK(d.err.find("no request arrives") == std::string::npos);
  // A device or a directory as the scenario: "does not exist" before, though it does.
  const Run z = run("plan --scenario /dev/zero", dir);
  CHECK(z.status != 0);
  CHECK(z.err.find("scenario file '/dev/zero' is not a regular file (a device, FIFO or socket)") != std::string::npos);
  const Run t = run("plan --scenario " + dir.string(), dir);
  CHECK(t.status != 0);
  CHECK(t.err.find("is not a regular file (a directory)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a deployment whose model: is not YAML is quoted in 60 characters, not printed whole (item 10)") {
  const fs::path dir = hisparse::test::scratch_dir("refusals_model_text");
  // The shipped deployment with its model: pointing at a 1 MB text file next to it.
  std::string yaml = slurp(fs::path(HISPARSE_SOURCE_DIR) / "scenarios/deployments/dsv32-8xh200-1tb.yaml");
  const size_t at = yaml.find("\nmodel: ");
  REQUIRE(at != std::string::npos);
  yaml.replace(at + 1, yaml.find('\n', at + 1) - at - 1, "model: ./notes.txt");
  std::ofstream(dir / "dep.yaml") << yaml;
  {
    std::ofstream notes(dir / "notes.txt");
    for (int i = 0; i < 40000; ++i) notes << "lorem-ipsum-dolor-";  // 18 × 40,000 = 720,000 characters, one line
  }
  const Run r = run("info --scenario " + (dir / "dep.yaml").string(), dir);
  CHECK(r.status != 0);
  CHECK(r.err.size() < 1000);  // before: the whole 720,000-character file
  CHECK(r.err.find("(a text of 720000 characters, not a YAML value)") != std::string::npos);
  CHECK(r.err.find("expected a mapping of keys to values") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an empty flag value and a negative thread count are refused, not read as the default") {
  const fs::path dir = hisparse::test::scratch_dir("refusals_empty_values");
  // Before: "--out ''" wrote nothing, "--seq-lens ''" and "--concurrency ''" were ignored, --threads -1 meant 2.
  struct Case {
    std::string args, flag;
  };
  for (const Case& c : {Case{"replay --trace " + kTrace + " --buffer-sizes 4096 --out ''", "--out"},
                        Case{"plan --scenario dsv32-8xh200-1tb --seq-lens '' --out " + (dir / "p").string(),
                             "--seq-lens"},
                        Case{kSim + "--concurrency '' --out " + (dir / "s").string(), "--concurrency"}}) {
    CAPTURE(c.args);
    const Run r = run(c.args, dir);
    CHECK(r.status != 0);
    CHECK(r.err.find(c.flag + " '' is empty (expected a value; leave the flag out for its default)") !=
          std::string::npos);
  }
  const Run t = run("replay --trace " + kTrace + " --buffer-sizes 4096 --threads -1", dir);
  CHECK(t.status != 0);
  CHECK(t.err.find("--threads -1 (expected >= 1, or 0 = the hardware threads)") != std::string::npos);
  const Run a = run("advise --scenario dsv32-8xh200-1tb --trace " + kTrace + " --threads -1", dir);
  CHECK(a.status != 0);
  CHECK(a.err.find("--threads -1 (expected >= 1 replay threads)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an output path that is an input is refused before anything is written (also list)") {
  // Before: `replay --trace X --per-step-csv X` replaced the trace by its own per-step CSV.
  const fs::path dir = hisparse::test::scratch_dir("refusals_output_over_input");
  fs::copy_file(kTrace, dir / "t.hstrace");
  const std::string before = slurp(dir / "t.hstrace");
  fs::create_symlink(dir / "t.hstrace", dir / "link.hstrace");
  for (const std::string& out : {(dir / "t.hstrace").string(), (dir / "." / "t.hstrace").string(),
                                 (dir / "link.hstrace").string()}) {
    CAPTURE(out);
    const Run r = run("replay --trace " + (dir / "t.hstrace").string() + " --buffer-sizes 4096 --per-step-csv " + out,
                      dir);
    CHECK(r.status != 0);
    CHECK(r.err.find("is the --trace input") != std::string::npos);
    CHECK(slurp(dir / "t.hstrace") == before);
  }
  const Run c = run("trace convert " + (dir / "t.hstrace").string() + " " + (dir / "link.hstrace").string(), dir);
  CHECK(c.status != 0);
  CHECK(c.err.find("is the --in input") != std::string::npos);
  CHECK(slurp(dir / "t.hstrace") == before);
  fs::remove_all(dir);
}
