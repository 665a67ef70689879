// @brief `hisparse fit-miss-model` end to end: the file it writes loads, carries its provenance, holds the numbers
// of the simulator's own fit (one binning), does not depend on --threads, and bad flags are refused by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "sim/miss/miss_model.h"
#include "sim/miss/miss_surface.h"
#include "tests/apps/cli_test_util.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

namespace fs = std::filesystem;
using namespace hisparse;
using hisparse::test::cli;
using hisparse::test::slurp;

namespace {

/// The data of a written surface: from "policies:" up to "provenance:" (the command line differs per run).
std::string data_section(const std::string& yaml) {
  const size_t a = yaml.find("\npolicies:"), b = yaml.find("\nprovenance:");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return yaml.substr(a, b - a);
}

}  // namespace

TEST_CASE("hisparse fit-miss-model end to end: provenance, the simulator's numbers, thread-independent output") {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_scratch" / ("fit_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 2;
  g.steps = 30;
  g.layers = 3;
  g.top_k = 16;
  g.prompt_len = 100;  // n 100..129: past H = 16 and 32 from the first step
  g.seed = 5;
  auto gen = traces::make_generated_trace(g);
  const fs::path trace = dir / "t.hst";
  auto writer = traces::make_native_writer(trace.string(), gen->meta());
  REQUIRE(traces::copy_trace(*gen, *writer) == 60);

  const fs::path out1 = dir / "one.yaml", out2 = dir / "two.yaml";
  const std::string base = cli() + " fit-miss-model --trace " + trace.string() +
                           " --h-over-k 1,2 --policy sglang-lru,belady --name cli-test --note 'a caveat, quoted'";
  REQUIRE(std::system((base + " --threads 1 --out " + out1.string() + " > /dev/null").c_str()) == 0);
  REQUIRE(std::system((base + " --threads 3 --out " + out2.string() + " > /dev/null").c_str()) == 0);
  const std::string text = slurp(out1);
  CHECK(data_section(text) == data_section(slurp(out2)));
  CHECK(text.find("# Caveats:\n#   a caveat, quoted\n") != std::string::npos);
  CHECK_FALSE(fs::exists(out1.string() + ".tmp"));

  const sim::MissSurface s = sim::load_miss_surface(out1.string());
  CHECK(s.name == "cli-test");
  REQUIRE(s.has_provenance);
  CHECK(s.provenance.command.find("hisparse fit-miss-model --trace " + trace.string()) == 0);
  CHECK(s.provenance.command.find("'a caveat, quoted'") != std::string::npos);
  REQUIRE(s.provenance.traces.size() == 1);
  const sim::MissTraceInfo& t = s.provenance.traces[0];
  CHECK(t.path == trace.string());
  CHECK(t.layers == 3);
  CHECK(t.top_k == 16);
  CHECK(t.requests == 2);
  CHECK(t.decode_steps == 60);
  CHECK(t.n_min == 100);
  CHECK(t.n_max == 129);
  CHECK(s.provenance.warmup_rule.find("ceil(H/K)") != std::string::npos);

  // The same numbers as the serving simulator's fit at H = 16 and 32 (to the written precision).
  for (const char* policy : {"sglang-lru", "belady"}) {
    const auto& cols = s.columns(policy);
    REQUIRE(cols.size() == 2);
    for (const sim::MissColumn& c : cols) {
      CAPTURE(policy);
      CAPTURE(c.h_over_k);
      const auto H = static_cast<int32_t>(c.h_over_k * 16);
      const sim::StatisticalMissParams p = sim::fit_statistical_miss_model(trace.string(), policy, H, 3, 1152);
      REQUIRE(c.steady.size() == p.by_ratio.size());
      for (size_t i = 0; i < c.steady.size(); ++i) {
        CHECK(std::abs(c.steady[i].first - p.by_ratio[i].first) <= 0.5e-4 + 1e-12);
        CHECK(std::abs(c.steady[i].second - p.by_ratio[i].second) <= 0.5e-6 + 1e-12);
      }
      CHECK(std::abs(c.warmup - p.warmup_fraction) <= 0.5e-6 + 1e-12);
      // Steady samples: 2 requests × 3 layers × (30 − 1 − ceil(H / 16)).
      CHECK(c.samples == 2 * 3 * (30 - 1 - H / 16));
    }
  }

  // Bad flags name themselves and write nothing.
  const fs::path bad = dir / "bad.yaml";
  const std::string err = (dir / "err.txt").string();
  CHECK(std::system((cli() + " fit-miss-model --trace " + trace.string() + " --h-over-k 0.5,2 --name x --out " +
                     bad.string() + " > /dev/null 2> " + err)
                        .c_str()) != 0);
  CHECK(slurp(err).find("--h-over-k: '0.5' is not a ratio in [1, 1024]") != std::string::npos);
  CHECK(std::system((cli() + " fit-miss-model --trace " + trace.string() + " --policy lru-ish --name x --out " +
                     bad.string() + " > /dev/null 2> " + err)
                        .c_str()) != 0);
  CHECK(slurp(err).find("lru-ish") != std::string::npos);
  CHECK(std::system((cli() + " fit-miss-model --trace " + trace.string() + " --name x --out " + (dir / "x.txt").string() +
                     " > /dev/null 2> " + err)
                        .c_str()) != 0);
  CHECK(slurp(err).find("must end in .yaml") != std::string::npos);
  CHECK_FALSE(fs::exists(bad));
  fs::remove_all(dir);
}
