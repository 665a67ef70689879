// @brief `hisparse plan --strategies` end to end: the five cache strategies side by side in stdout and plan.json,
// recall "not measured" without a selection study, and the sub-flags refused without --strategies.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

TEST_CASE("plan --strategies: every strategy in stdout and plan.json; sub-flags need --strategies") {
  const fs::path dir = hisparse::test::scratch_dir("plan_strategies");
  const std::string out = (dir / "out").string();
  const Run r = run("plan --scenario dsv32-8xh200-1tb --seq-lens 32K --strategies --no-plots --out " + out, dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  for (const char* s : {"full KV", "HiSparse", "eviction", "logical masking", "compression"}) {
    CAPTURE(s);
    CHECK(r.out.find(s) != std::string::npos);
  }
  CHECK(r.out.find("not measured") != std::string::npos);
  const std::string json = slurp(fs::path(out) / "plan.json");
  CHECK(json.find("\"strategies\"") != std::string::npos);
  const Run bad = run("plan --scenario dsv32-8xh200-1tb --eviction-budget 4096 --no-plots --out " + out, dir);
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--strategies") != std::string::npos);
}

TEST_CASE("plan and info on the GQA / SWA deployments: full KV planned, HiSparse not applicable, strategies work") {
  const fs::path dir = hisparse::test::scratch_dir("plan_gqa");
  // Full-KV requests per instance at 16K, from the pool arithmetic in tests/core/test_memory_budget.cpp:
  // llama 432,069 / 16,384 → 26; qwen3 (tp 2, one rank) 727,687 / 16,384 → 44; gpt-oss 950,062 / 16,384 → 57.
  // The binding limit is the HBM pool or the TPOT SLO, whichever is smaller; both are printed.
  for (const char* name : {"llama31-8b-1xh100", "qwen3-32b-2xh200-tp2", "gptoss-120b-1xh200"}) {
    CAPTURE(name);
    const std::string out = (dir / name).string();
    const Run r = run(std::string("plan --scenario ") + name + " --seq-lens 16K --strategies --no-plots --out " + out, dir);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("16384  full") != std::string::npos);
    CHECK(r.out.find("16384  hisparse") != std::string::npos);
    CHECK(r.out.find("not applicable: no sparse indexer") != std::string::npos);
    for (const char* s : {"full KV", "eviction", "logical masking", "compression"}) {
      CAPTURE(s);
      CHECK(r.out.find(s) != std::string::npos);
    }
    CHECK(fs::file_size(fs::path(out) / "plan.html") > 0);
    const std::string json = slurp(fs::path(out) / "plan.json");
    CHECK(json.find("\"hisparse_applicable\": false") != std::string::npos);
    const Run info = run(std::string("info --scenario ") + name, dir);
    REQUIRE(info.status == 0);
    CHECK(info.out.find("max_total_num_tokens") != std::string::npos);
    CHECK(info.out.find("HiSparse: not applicable") != std::string::npos);
  }
  const Run l = run("info --scenario llama31-8b-1xh100", dir);
  CHECK(l.out.find("432,069 tokens") != std::string::npos);
  CHECK(l.out.find("2 × kv_heads_per_rank × head_dim × 2 (bf16) = 2 × 8 × 128 × 2") != std::string::npos);
  const Run g = run("info --scenario gptoss-120b-1xh200", dir);
  CHECK(g.out.find("950,062 tokens") != std::string::npos);
  CHECK(g.out.find("760,049 tokens") != std::string::npos);
  // simulate refuses a model without a sparse indexer, saying why.
  const Run sim = run("simulate --scenario llama31-8b-1xh100 --workload synthetic_poisson --out " + (dir / "sim").string(), dir);
  CHECK(sim.status != 0);
  CHECK(sim.err.find("no sparse indexer") != std::string::npos);
  // replay --scenario prices HiSparse's latent rows: it refuses such a model instead of pricing 0-byte rows.
  const Run rep = run("replay --trace " + std::string(HISPARSE_SOURCE_DIR) +
                          "/traces/bundled/default.hstrace --buffer-sizes 4096 --no-plots --quiet --scenario "
                          "llama31-8b-1xh100 --out " + (dir / "rep").string(),
                      dir);
  CHECK(rep.status != 0);
  CHECK(rep.err.find("has no sparse indexer") != std::string::npos);
  CHECK(!fs::exists(dir / "rep" / "replay.json"));
}
