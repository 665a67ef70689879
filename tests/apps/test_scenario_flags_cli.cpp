// @brief One override vocabulary: plan, advise and simulate take the same flag spellings (declared once, in
// apps/scenario_flags.cpp), each help says per instance or per rank, --device-pool-tokens 0 means "derive" in both
// plan and simulate, --max-running-requests is SGLang's per-instance count, and simulate's old --cost still runs
// but says it is deprecated.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

namespace {

/// The help entry of `flag` (from "--flag" to the next option) without blanks (each command lays its columns out to
/// its own longest flag, so lines wrap, even inside a word, at other places), "" when absent.
std::string help_of(const std::string& help, const std::string& flag) {
  const size_t at = help.find("\n  --" + flag + " ");
  if (at == std::string::npos) return "";
  const size_t next = help.find("\n  -", at + 1);
  const std::string entry = help.substr(at, next == std::string::npos ? std::string::npos : next - at);
  std::string out;
  for (char c : entry)
    if (c != ' ' && c != '\n') out += c;
  return out;
}

constexpr const char* kFast = "--seq-lens 16K --sweep-buffer-sizes 4096 --sweep-ratios 2 --no-plots";

}  // namespace

TEST_CASE("override flags: plan, advise and simulate spell them alike and say per instance or per rank") {
  const fs::path dir = hisparse::test::scratch_dir("scenario_flags_help");
  const Run plan = run("plan --help", dir), advise = run("advise --help", dir), simulate = run("simulate --help", dir);
  REQUIRE(plan.status == 0);
  REQUIRE(advise.status == 0);
  REQUIRE(simulate.status == 0);
  MESSAGE("the shared flags are in every command, with the same help text");
  for (const char* flag : {"top-k", "tpot-slo-ms", "kv-dtype", "page-size", "mem-fraction-static", "host-dram-bytes",
                           "hbm-bytes", "device-pool-tokens", "host-pool-tokens", "full-pool-tokens", "cost-params",
                           "calibration", "step-calibration", "miss-curve", "miss-fraction"}) {
    const std::string name = flag;
    CAPTURE(name);
    const std::string p = help_of(plan.out, flag);
    CHECK(!p.empty());
    CHECK(p == help_of(advise.out, flag));
    // simulate's --overlap takes `both`; every other shared flag reads the same.
    CHECK(p == help_of(simulate.out, flag));
  }
  MESSAGE("pool sizes are per GPU (dp rank); --max-running-requests per instance, in plan and simulate alike");
  CHECK(help_of(plan.out, "device-pool-tokens").find("perGPU(dprank)") != std::string::npos);
  const std::string mrr = help_of(plan.out, "max-running-requests");
  CHECK(mrr.find("perinstance") != std::string::npos);
  CHECK(mrr.find("perdprank") == std::string::npos);
  CHECK(mrr == help_of(simulate.out, "max-running-requests"));
  MESSAGE("advise chooses H, the ratio and the cap: it offers no flag for them");
  CHECK(help_of(advise.out, "max-running-requests").empty());
  CHECK(help_of(advise.out, "device-buffer-size").empty());
  MESSAGE("simulate's old --cost is listed as a deprecated alias");
  CHECK(help_of(simulate.out, "cost").find("deprecatedaliasof--cost-params") != std::string::npos);
}

TEST_CASE("override flags: --device-pool-tokens 0 derives the pool in plan and in simulate") {
  const fs::path dir = hisparse::test::scratch_dir("scenario_flags_pool0");
  MESSAGE("plan refused 0 before; now 0 is the YAML's own 'derive' and the plan equals the one without the flag");
  const Run a = run(std::string("plan --scenario dsv32-8xh200-1tb ") + kFast + " --out " + (dir / "a").string(), dir);
  const Run b = run(std::string("plan --scenario dsv32-8xh200-1tb ") + kFast + " --device-pool-tokens 0 --out " +
                        (dir / "b").string(), dir);
  CAPTURE(b.err);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  // Everything but the run section (its command line and wall time differ).
  auto without_run = [](const std::string& json) { return json.substr(0, json.find("\"run\": {")); };
  const std::string plan_a = slurp(dir / "a" / "plan.json"), plan_b = slurp(dir / "b" / "plan.json");
  REQUIRE(plan_a.find("\"rows\"") != std::string::npos);
  CHECK(without_run(plan_a) == without_run(plan_b));
  const Run s = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --mode hisparse --duration 1 "
                    "--timeline-length 0 --device-pool-tokens 0 --out " + (dir / "s").string(), dir);
  CAPTURE(s.err);
  CHECK(s.status == 0);
  MESSAGE("a negative count is refused by both with the same words");
  const Run pn = run("plan --scenario dsv32-8xh200-1tb --device-pool-tokens -5 --no-plots --out " + (dir / "x").string(), dir);
  const Run sn = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --device-pool-tokens -5 --out " +
                         (dir / "y").string(), dir);
  CHECK(pn.status != 0);
  CHECK(sn.status != 0);
  CHECK(pn.err.find("--device-pool-tokens -5: expected >= 0 tokens") != std::string::npos);
  CHECK(sn.err.find("--device-pool-tokens -5: expected >= 0 tokens") != std::string::npos);
}

TEST_CASE("override flags: --max-running-requests is per instance; each of 8 dp ranks gets floor(N / 8)") {
  const fs::path dir = hisparse::test::scratch_dir("scenario_flags_mrr");
  MESSAGE("100 per instance: plan.json's deployment and the cap limit read 12 per rank (SGLang: 100 // 8)");
  const Run p = run(std::string("plan --scenario dsv32-8xh200-1tb ") + kFast + " --max-running-requests 100 --out " +
                        (dir / "p").string(), dir);
  CAPTURE(p.err);
  REQUIRE(p.status == 0);
  const std::string json = slurp(dir / "p" / "plan.json");
  CHECK(json.find("\"max_running_requests\": 12") != std::string::npos);
  MESSAGE("fewer than one per rank is an error in plan and simulate alike");
  const Run bp = run("plan --scenario dsv32-8xh200-1tb --max-running-requests 7 --no-plots --out " + (dir / "x").string(), dir);
  const Run bs = run("simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --max-running-requests 7 --out " +
                         (dir / "y").string(), dir);
  CHECK(bp.status != 0);
  CHECK(bs.status != 0);
  CHECK(bp.err.find("--max-running-requests 7 is per instance") != std::string::npos);
  CHECK(bs.err.find("--max-running-requests 7 is per instance") != std::string::npos);
}

TEST_CASE("override flags: --cost-params in every command; simulate's --cost still works and says it is deprecated") {
  const fs::path dir = hisparse::test::scratch_dir("scenario_flags_cost");
  const std::string common = "simulate --scenario dsv32-8xh200-1tb --workload synthetic_poisson --mode full --duration 1 "
                             "--timeline-length 0 ";
  const Run fresh = run(common + "--cost-params auto --out " + (dir / "a").string(), dir);
  const Run old = run(common + "--cost auto --out " + (dir / "b").string(), dir);
  REQUIRE(fresh.status == 0);
  REQUIRE(old.status == 0);
  MESSAGE("the same file gives the same run; only the old spelling prints the deprecation");
  CHECK(slurp(dir / "a" / "report.json") == slurp(dir / "b" / "report.json"));
  CHECK(old.err.find("--cost is deprecated, use --cost-params") != std::string::npos);
  CHECK(fresh.err.find("deprecated") == std::string::npos);
  const Run both = run(common + "--cost auto --cost-params auto --out " + (dir / "c").string(), dir);
  CHECK(both.status != 0);
  MESSAGE("plan and advise take --cost-params too (a missing file is named by both)");
  const Run p = run("plan --scenario dsv32-8xh200-1tb --cost-params /no/such.yaml --no-plots --out " + (dir / "p").string(), dir);
  const Run a = run("advise --scenario dsv32-8xh200-1tb --cost-params /no/such.yaml --no-plots --out " + (dir / "q").string(), dir);
  CHECK(p.status != 0);
  CHECK(a.status != 0);
  CHECK(p.err.find("/no/such.yaml") != std::string::npos);
  CHECK(a.err.find("/no/such.yaml") != std::string::npos);
}
