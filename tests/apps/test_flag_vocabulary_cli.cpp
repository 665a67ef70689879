// @brief The words a user brings (issue 40): byte sizes in GB, GiB, TB and their spellings with the meaning --help
// states, a warning when --hbm-bytes is well below the hardware file's, SGLang's own flag names where they mean the
// same thing, "did you mean" for near misses, and the command that resumes an interrupted sweep.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::cli;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

namespace {

/// The plan's row "<seq_len>  <mode>  <max conc>" of 32K: the max concurrency column of `mode`.
int max_concurrency(const std::string& out, const std::string& mode) {
  const size_t at = out.find("   32768  " + mode + " ");
  if (at == std::string::npos) return -1;
  return std::stoi(out.substr(at + 10 + mode.size(), 20));
}

std::string plan_32k(const std::string& extra, const fs::path& dir) {
  const Run r = run("plan --scenario dsv32-8xh200-1tb --seq-lens 32K --no-plots --out " + (dir / "p").string() + " " +
                        extra,
                    dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

}  // namespace

TEST_CASE("--hbm-bytes: GB is 10^9 B, GiB 2^30 B, any case, B optional; 5 % below the hardware's is warned (item 3)") {
  const fs::path dir = hisparse::test::scratch_dir("vocabulary_bytes");
  // --help says what the units mean.
  const Run h = run("plan --help", dir);
  CHECK(h.out.find("GB = 10^9 B") != std::string::npos);
  CHECK(h.out.find("GiB = 2^30 B") != std::string::npos);
  // The H200 file's own figure, in bytes or in MiB, is the same plan as no flag at all, without a warning.
  const std::string none = plan_32k("", dir);
  const int full = max_concurrency(none, "full");
  REQUIRE(full > 0);
  for (const char* same : {"143771MiB", "143771 mib", "150754820096"}) {
    CAPTURE(same);
    const std::string out = plan_32k(std::string("--hbm-bytes '") + same + "'", dir);
    CHECK(max_concurrency(out, "full") == full);
    CHECK(out.find("warning: --hbm-bytes") == std::string::npos);
  }
  // "141GB", "141G" and "141 gb" are all 141e9 B (accepted before only as 141GB, and silently): 6.5 % below the
  // file's 150,754,820,096 B, so fewer full-KV requests fit, and a warning names both figures.
  int low = -1;
  for (const char* datasheet : {"141GB", "141G", "141 gb"}) {
    CAPTURE(datasheet);
    const std::string out = plan_32k(std::string("--hbm-bytes '") + datasheet + "'", dir);
    if (low < 0) low = max_concurrency(out, "full");
    CHECK(max_concurrency(out, "full") == low);
    CHECK(out.find("warning: --hbm-bytes 141000000000 B (141.00 GB = 131.32 GiB) is 6.5 % below hardware") !=
          std::string::npos);
    CHECK(out.find("hbm_bytes 150754820096 B (150.75 GB = 140.40 GiB)") != std::string::npos);
  }
  CHECK(low < full);
  // 141 GiB = 151,397,597,184 B is 0.4 % above the file: no warning.
  const std::string gib = plan_32k("--hbm-bytes 141GiB", dir);
  CHECK(gib.find("warning: --hbm-bytes") == std::string::npos);
  // Not a byte size: the flag, the value and the units it takes.
  const Run bad = run("plan --scenario dsv32-8xh200-1tb --hbm-bytes '141 gigs'", dir);
  CHECK(bad.status != 0);
  CHECK(bad.err.find("plan: --hbm-bytes '141 gigs' is not a byte size") != std::string::npos);
  CHECK(bad.err.find("GiB = 2^30 B") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("SGLang's flag names: aliases where they mean the same, where the setting lives where they do not") {
  const fs::path dir = hisparse::test::scratch_dir("vocabulary_sglang");
  // --kv-cache-dtype fp8_e4m3 is --kv-dtype fp8 (refused as an unknown option before).
  const std::string theirs = plan_32k("--kv-cache-dtype fp8_e4m3", dir);
  const std::string ours = plan_32k("--kv-dtype fp8", dir);
  CHECK(max_concurrency(theirs, "full") == max_concurrency(ours, "full"));
  CHECK(max_concurrency(theirs, "hisparse") == max_concurrency(ours, "hisparse"));
  // bench_serving's --max-concurrency is simulate's --concurrency: the same closed loop.
  const std::string sim = "simulate --scenario dsv32-8xh200-1tb --workload mooncake_conversation --mode full "
                          "--num-requests 8 --no-plots --out ";
  const Run a = run(sim + (dir / "a").string() + " --max-concurrency 4", dir);
  const Run b = run(sim + (dir / "b").string() + " --concurrency 4", dir);
  CAPTURE(a.err);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  CHECK(slurp(dir / "a" / "report.json").find("\"clients\": 4") != std::string::npos);
  CHECK(slurp(dir / "b" / "report.json").find("\"clients\": 4") != std::string::npos);
  // --tp-size and --request-rate have no flag here: the message says where their setting lives.
  const Run tp = run("plan --scenario dsv32-8xh200-1tb --tp-size 8", dir);
  CHECK(tp.status != 0);
  CHECK(tp.err.find("unknown flag --tp-size: SGLang's --tp-size is the deployment YAML's decode.tp") !=
        std::string::npos);
  const Run rate = run(sim + (dir / "c").string() + " --request-rate 4", dir);
  CHECK(rate.status != 0);
  CHECK(rate.err.find("--request-rate is a workload's arrival rate here") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an unknown flag is answered with the nearest ones by edit distance") {
  const fs::path dir = hisparse::test::scratch_dir("vocabulary_did_you_mean");
  const Run c = run("simulate --scenario dsv32-8xh200-1tb --workload mooncake_conversation --concurency 8", dir);
  CHECK(c.status != 0);
  CHECK(c.err.find("unknown flag --concurency: did you mean --concurrency?") != std::string::npos);
  const Run m = run("plan --scenario dsv32-8xh200-1tb --mem-fraction-statc 0.8", dir);
  CHECK(m.status != 0);
  CHECK(m.err.find("did you mean --mem-fraction-static?") != std::string::npos);
  const Run x = run("plan --scenario dsv32-8xh200-1tb --xyzzy 8", dir);
  CHECK(x.status != 0);
  CHECK(x.err.find("unknown flag --xyzzy (see --help") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an interrupted sweep (SIGINT from Ctrl-C, SIGTERM, SIGHUP) prints the command that resumes it") {
  const fs::path dir = hisparse::test::scratch_dir("vocabulary_sweep_interrupt");
  // Signalled once it has started (its first line names its work items), one worker on the example grid's 14 items;
  // before, the sweep died without a word. SIGTERM: a shell without job control starts background jobs with SIGINT
  // ignored (POSIX), and the same handler serves the three signals.
  const std::string grid = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/sweeps/example.yaml";
  const std::string out = (dir / "sw").string(), err_file = (dir / "e.txt").string();
  const std::string script = cli() + " sweep " + grid + " --out " + out + " --jobs 1 > /dev/null 2> " + err_file +
                             " & pid=$!; i=0; while ! grep -q 'work items' " + err_file +
                             " 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; kill -TERM $pid; "
                             "wait $pid";
  std::ofstream(dir / "interrupt.sh") << script << "\n";
  const int status = std::system(("sh " + (dir / "interrupt.sh").string()).c_str());
  CHECK(status != 0);
  const std::string err = slurp(err_file);
  CAPTURE(err);
  CHECK(err.find("sweep: interrupted; the finished work items are in " + out + "/sweep.journal") != std::string::npos);
  CHECK(err.find("hisparse sweep " + grid + " --out " + out + " --jobs 1 --resume") != std::string::npos);
  fs::remove_all(dir);
}
