// @brief `hisparse validate --engine-record FILE` end to end: the shipped record prints its table and PASS with exit
// 0; a truncated file exits 1 naming it; a flag of the GPU validation beside it is refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;

namespace {
const std::string kRecord = std::string(HISPARSE_SOURCE_DIR) + "/tests/validate/data/engine_record_h100_2026-11-28.npz";
}

TEST_CASE("validate --engine-record on the shipped record: a table row per case, every one PASS, exit 0") {
  const fs::path dir = hisparse::test::scratch_dir("cli_engine_record");
  const Run r = run("validate --engine-record " + kRecord, dir);
  INFO(r.out, r.err);
  CHECK(r.status == 0);
  for (const char* c : {"v2 case0 plan", "v2 case1 slot_pos", "flashmla-bf16 out", "flashmla-fp8 lse",
                        "deepgemm-masked d", "deepgemm-masked rows >= m", "deepgemm-dense d"})
    CHECK(r.out.find(c) != std::string::npos);
  CHECK(r.out.find("FAIL") == std::string::npos);
  CHECK(r.out.find("validate --engine-record: 11 rows, 0 failed: PASS") != std::string::npos);
}

TEST_CASE("validate --engine-record: a truncated file exits 1 naming it; --only beside it is refused") {
  const fs::path dir = hisparse::test::scratch_dir("cli_engine_record_bad");
  const std::string whole = hisparse::test::slurp(kRecord);
  const fs::path cut = dir / "cut.npz";
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 3);
  Run r = run("validate --engine-record " + cut.string(), dir);
  CHECK(r.status != 0);
  CHECK(r.err.find(cut.string()) != std::string::npos);
  r = run("validate --engine-record " + kRecord + " --only topk", dir);
  CHECK(r.status != 0);
  CHECK(r.err.find("--only does not apply") != std::string::npos);
}
