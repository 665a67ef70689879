// @brief The deployments of the published field runs (scenarios/field/) and their hardware plan end to end through
// the CLI, loading each hardware file's own cost-model file: `plan` runs on every new deployment (and on a B200 copy
// of the DeepSeek-V3.2 node), planning HiSparse at every default context and naming the cost terms it used, and
// `hisparse info` names the deployment's hardware.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;
using hisparse::test::slurp;

TEST_CASE("plan runs on every field deployment, with its hardware's cost-model file") {
  const fs::path dir = hisparse::test::scratch_dir("cli_field_deployments");
  const struct {
    const char* deployment;
    const char* hardware;
    const char* cost_model;
  } cases[] = {{"glm52-2x8xh200-tp16", "h200", "sglang-hopper.yaml"},
               {"glm51-8xrtxpro6000-tp8", "rtx-pro-6000", "sglang-sm120.yaml"},
               {"glm51-2xh20-pd", "h20-3e", "sglang-hopper.yaml"},
               {"glm51-8xh200-colocated", "h200", "sglang-hopper.yaml"}};
  for (const auto& c : cases) {
    CAPTURE(c.deployment);
    const fs::path out = dir / c.deployment;
    const Run r = run(std::string("plan --scenario ") + c.deployment + " --no-plots -o " + out.string(), dir);
    REQUIRE(r.status == 0);
    const std::string md = slurp(out / "plan.md");
    // Both modes at every default context (16K .. 128K), HiSparse applicable on these DSA models.
    for (const char* n : {"| 16K | HiSparse |", "| 32K | HiSparse |", "| 64K | HiSparse |", "| 128K | HiSparse |",
                          "| 128K | full KV |"})
      CHECK(md.find(n) != std::string::npos);
    CHECK(md.find("not applicable") == std::string::npos);
    // The hardware's own cost-model file is the one priced.
    CHECK(md.find(c.cost_model) != std::string::npos);
    // `hisparse info` loads the same deployment and names its hardware.
    const Run i = run(std::string("info --scenario ") + c.deployment, dir);
    CHECK(i.status == 0);
    CHECK(i.out.find(std::string("hardware ") + c.hardware) != std::string::npos);
  }
  // A B200 deployment (no shipped run uses one yet): the B200 file and its SM100 cost model load through plan.
  const fs::path b200 = dir / "dsv32-8xb200.yaml";
  {
    std::string yaml = slurp(fs::path(HISPARSE_SOURCE_DIR) / "scenarios" / "deployments" / "dsv32-8xh200-1tb.yaml");
    yaml.replace(yaml.find("hardware: h200"), 14, "hardware: b200");
    yaml.replace(yaml.find("name: dsv32-8xh200-1tb"), 22, "name: dsv32-8xb200");
    std::ofstream(b200) << yaml;
  }
  const Run rb = run("plan --scenario " + b200.string() + " --no-plots -o " + (dir / "b200").string(), dir);
  REQUIRE(rb.status == 0);
  CHECK(slurp(dir / "b200" / "plan.md").find("sglang-sm100.yaml") != std::string::npos);
  fs::remove_all(dir);
}
