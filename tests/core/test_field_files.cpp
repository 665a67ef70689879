// @brief The published field measurements (scenarios/field/*.yaml, schema in scenarios/field/README.md): every file
// names itself after its stem, cites a publication and date, resolves its deployment, and every point has a unique
// id, a known metric, a published figure or range and its metric's band (capacity 5 %, TPOT and tokens/s 10 %, gains
// 15 %); a pending point says why it is not scored yet.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "core/scenario_loader.h"
#include "core/yaml_reader.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {
const fs::path kField = fs::path(HISPARSE_SOURCE_DIR) / "scenarios" / "field";
}  // namespace

TEST_CASE("field files: each cites its source, resolves its deployment and states well-formed points") {
  int files = 0;
  std::set<std::string> deployments;
  for (const auto& e : fs::directory_iterator(kField)) {
    // fits.yaml beside them is the suite's fits, not a field file (tests/sim/fidelity reads it).
    if (e.path().extension() != ".yaml" || e.path().filename() == "fits.yaml") continue;
    ++files;
    CAPTURE(e.path().string());
    const YAML::Node f = load_yaml_file(e.path().string());
    CHECK(f["name"].as<std::string>() == e.path().stem().string());
    CHECK(!f["title"].as<std::string>().empty());
    // Source: a publication, a date (YYYY-MM or YYYY-MM-DD) and the figures as published; the URL may be "".
    CHECK(!f["source"]["publication"].as<std::string>().empty());
    CHECK(f["source"]["url"].IsDefined());
    const std::string date = f["source"]["date"].as<std::string>();
    CHECK((date.size() == 7 || date.size() == 10));
    CHECK(!f["source"]["quote"].as<std::string>().empty());
    // The deployment resolves by name (or relative path) and loads with its model and hardware.
    const std::string dep = f["deployment"].as<std::string>();
    const fs::path rel = e.path().parent_path() / dep;
    const Scenario s = load_scenario(fs::exists(rel) ? rel.string() : dep);
    CHECK(s.model.has_sparse_indexer());  // every run so far is HiSparse on a DSA model
    deployments.insert(s.deployment.name);
    CHECK(f["workload"]["input_tokens"].as<int64_t>() > 0);
    CHECK(f["workload"]["output_tokens"].as<int64_t>() > 0);
    (void)f["workload"]["closed_loop"].as<bool>();
    // Every unstated setting is written down.
    CHECK(f["assumed"].IsSequence());
    CHECK(f["assumed"].size() >= 1);
    std::set<std::string> ids;
    REQUIRE(f["points"].IsSequence());
    CHECK(f["points"].size() >= 1);
    for (const YAML::Node& p : f["points"]) {
      const std::string id = p["id"].as<std::string>();
      CAPTURE(id);
      CHECK(ids.insert(id).second);
      const std::string metric = p["metric"].as<std::string>();
      CHECK((metric == "tpot_ms" || metric == "tokens_per_s" || metric == "gain" || metric == "max_concurrency" ||
             metric == "pool_tokens"));
      if (metric == "gain") CHECK_FALSE(p["mode"].IsDefined());
      else CHECK((p["mode"].as<std::string>() == "hisparse" || p["mode"].as<std::string>() == "full"));
      // A pending point (declared, not scored yet) says why.
      if (p["pending"].IsDefined()) CHECK(!p["pending"].as<std::string>().empty());
      // Capacity has no concurrency (it is the answer); max_concurrency needs its context (a token pool has none);
      // the others run at a concurrency.
      if (metric == "max_concurrency" || metric == "pool_tokens") {
        CHECK_FALSE(p["concurrency"].IsDefined());
        if (metric == "max_concurrency") CHECK(p["context"].as<int64_t>() > 0);
        CHECK(p["tolerance_pct"].as<double>() == 5);
      } else {
        CHECK(p["concurrency"].as<int>() >= 1);
        // Bands per metric (scenarios/field/README.md): TPOT and tokens/s 10 %, gains 15 %.
        CHECK(p["tolerance_pct"].as<double>() == (metric == "gain" ? 15 : 10));
      }
      // Exactly one of a published figure or a [low, high] range.
      CHECK(p["published"].IsDefined() != p["published_range"].IsDefined());
      if (p["published"].IsDefined()) CHECK(p["published"].as<double>() > 0);
      else CHECK(p["published_range"][0].as<double>() < p["published_range"][1].as<double>());
    }
  }
  // The runs issue 27 lists: InferenceX #2275, SGLang #33075, the two LMSYS blog runs, the DeepSeek-V3.2 article,
  // SGLang #23606; four deployments of their own and the shipped DeepSeek-V3.2 node.
  CHECK(files >= 6);
  for (const char* d : {"glm52-2x8xh200-tp16", "glm51-8xrtxpro6000-tp8", "glm51-2xh20-pd", "glm51-8xh200-colocated",
                        "dsv32-8xh200-1tb"})
    CHECK(deployments.count(d) == 1);
}
