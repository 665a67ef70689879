// @brief `hisparse simulate` end to end: a closed-loop concurrency sweep writes its table, JSON, CSV and plot; the
// HiSparse flags replace the deployment's values; the launch line follows the modes run; the transfers line follows the
// host layout; bad flags are named.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::cli;
using hisparse::test::slurp;
using hisparse::test::Run;
using hisparse::test::run;

TEST_CASE("simulate --concurrency sweeps closed-loop levels in both modes and writes the sweep files and plot") {
  const fs::path dir = hisparse::test::scratch_dir("simulate_sweep");
  const std::string out = (dir / "out").string();
  const Run r = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --concurrency 1,4 --num-requests 8 "
                    "--device-buffer-size 6144 --host-to-device-ratio 4 --tpot-slo-ms 80 --out " + out, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("concurrency sweep (modelled)") != std::string::npos);
  // The first line: the simulated settings (the overridden H and ratio) as SGLang launch flags.
  CHECK(r.out.rfind("launch SGLang, as simulated: --enable-hisparse --hisparse-config '{\"top_k\": 2048, "
                    "\"device_buffer_size\": 6144, \"host_to_device_ratio\": 4}'", 0) == 0);
  CHECK(r.out.find("crossover:") != std::string::npos);
  CHECK(r.out.find("TTFT is not modelled") != std::string::npos);  // PD without a prefill section
  CHECK(r.out.find("ranks: 8 per decode instance") != std::string::npos);
  const std::string json = slurp(fs::path(out) / "sweep.json");
  CHECK(json.find("\"concurrency\": 4, \"mode\": \"hisparse\"") != std::string::npos);
  CHECK(json.find("\"figures_kind\": \"modelled\"") != std::string::npos);
  CHECK(fs::file_size(fs::path(out) / "sweep.png") > 1000);
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.json.tmp"));
  // The crossover counts only levels where HiSparse meets the SLO, which the table, the JSON and the plot carry;
  // the plot's TPOT axis is logarithmic. Wait (arrival until decoding) is reported apart from TPOT.
  CHECK(r.out.find("meets the 80 ms SLO") != std::string::npos);
  CHECK(json.find("\"tpot_slo_ms\": 80,") != std::string::npos);
  CHECK(json.find("\"wait_p50_ms\": ") != std::string::npos);
  CHECK(r.out.find("TPOT on a log axis, the 80 ms SLO line") != std::string::npos);
  CHECK(slurp(fs::path(out) / "sweep.csv").find(",wait_p50_ms,wait_p99_ms,") != std::string::npos);
  // Each level's steady window (every client in flight, the figure advise's goodput compares with) is printed and kept.
  CHECK(r.out.find("steady tok/s (steps while every client had a request in flight): 1: full ") != std::string::npos);
  CHECK(json.find("\"steady_tokens_per_s\": ") != std::string::npos);
  CHECK(slurp(fs::path(out) / "sweep.csv").find(",host_alloc_failures,steady_tokens_per_s\n") != std::string::npos);
  // The flags reach the run: the single-level run's summary carries the overridden SLO and the host pool of ratio 4.
  const std::string one = (dir / "one").string();
  const Run s = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --mode hisparse --concurrency 2 "
                    "--num-requests 4 --tpot-slo-ms 80 --host-pool-tokens 640000 --timeline-length 0 --out " + one, dir);
  REQUIRE(s.status == 0);
  const std::string summary = slurp(fs::path(one) / "summary_hisparse_none.json");
  CHECK(summary.find("\"tpot_slo_ms\": 80") != std::string::npos);
  CHECK(summary.find("\"host\": 640000") != std::string::npos);
  CHECK(summary.find("\"clients\": 2") != std::string::npos);
  CHECK(summary.find("\"wait_ms\": {") != std::string::npos);
  CHECK(s.out.find(" wait p50 ") != std::string::npos);
  // Bad values are named.
  const Run b1 = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --concurrency 4,2", dir);
  CHECK(b1.status != 0);
  CHECK(b1.err.find("--concurrency '4,2'") != std::string::npos);
  const Run b2 = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --device-buffer-size 1000", dir);
  CHECK(b2.status != 0);
  CHECK(b2.err.find("device_buffer_size") != std::string::npos);
  const Run b3 = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --admission maybe", dir);
  CHECK(b3.status != 0);
  CHECK(b3.err.find("--admission") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("simulate's launch line follows the modes run, not the deployment's own HiSparse switch") {
  const fs::path dir = hisparse::test::scratch_dir("simulate_launch_line");
  const std::string out = (dir / "out").string();
  const std::string common = " --workload synthetic_poisson --duration 2 --timeline-length 0 --out " + out;
  // dsv4-flash-8xh100-tp8 leaves HiSparse off; run with --mode hisparse it was simulated with HiSparse on, so the line
  // gives the flags that launch it.
  Run r = run("simulate --scenario dsv4-flash-8xh100-tp8 --mode hisparse" + common, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("launch SGLang, as simulated: --enable-hisparse --hisparse-config '{\"top_k\": 512, ", 0) == 0);
  CHECK(r.out.find("HiSparse off") == std::string::npos);
  // dsv32-8xh200-1tb turns HiSparse on; a full-KV run alone launches without it.
  r = run("simulate --scenario dsv32-8xh200-1tb --mode full" + common, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("--enable-hisparse") == std::string::npos);
  // Both modes: the HiSparse flags, and a note that the full-KV runs drop them.
  r = run("simulate --scenario dsv32-8xh200-1tb --mode both" + common, dir);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("(the full-KV runs without --enable-hisparse and --hisparse-config)") != std::string::npos);
}

TEST_CASE("simulate's transfers line names page_first_direct's copies: one per missed row per layer, one per page per "
          "layer for a prompt") {
  const fs::path dir = hisparse::test::scratch_dir("simulate_direct_layout");
  // The TP8 H100 deployment with its host pool laid out page first and copied page by page (no transfer kernel).
  std::string yaml = slurp(fs::path(HISPARSE_SOURCE_DIR) / "scenarios/deployments/dsv4-flash-8xh100-tp8.yaml");
  yaml += "\nhost_layout: page_first_direct\n";
  const fs::path deployment = dir / "direct.yaml";
  {
    std::ofstream f(deployment);
    f << yaml;
  }
  const std::string out = (dir / "out").string();
  const Run r = run("simulate --scenario " + deployment.string() +
                        " --workload synthetic_poisson --duration 2 --mode hisparse --timeline-length 0 --out " + out,
                    dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("decode loads each missed row of each layer in its own copy (host_layout page_first_direct)") !=
        std::string::npos);
  CHECK(r.out.find("copies of a page of one layer each (colocated staging, one per page per layer of each request)") !=
        std::string::npos);
  CHECK(r.out.find("per-layer loads") == std::string::npos);
}
