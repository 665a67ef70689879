// @brief Help and messages (issue 28 item 6): every command's help opens with what it does, the top-level summary says
// what replay and bench do now, trace gen's presets are spelled out, and bad input is named: an out-of-range integer
// with its range, a NaN SLO by its flag, an empty list item, a binary workload, a trace of another model's depth.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::Run;
using hisparse::test::run;

TEST_CASE("help: replay's and simulate's open with their description; the top-level summary and trace gen's presets") {
  const fs::path dir = hisparse::test::scratch_dir("messages_help");
  // replay --help starts with its usage line and description, its advice flags come later under their own caption.
  const Run r = run("replay --help", dir);
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("hisparse replay --trace T", 0) == 0);
  const size_t advice = r.out.find("advice: with --scenario");
  CHECK(advice != std::string::npos);
  CHECK(r.out.find("--seq-lens arg") > advice);  // an advise flag, under that caption
  CHECK(r.out.find("--trace arg") < advice);
  // simulate --help says what simulate does before its options.
  const Run s = run("simulate --help", dir);
  REQUIRE(s.status == 0);
  CHECK(s.out.rfind("hisparse simulate --scenario S --workload W", 0) == 0);
  CHECK(s.out.find("Discrete-event serving simulation") < s.out.find("--scenario arg"));
  // hisparse --help: replay no longer claims to recommend on its own; bench names every benchmark family.
  const Run h = run("--help", dir);
  CHECK(h.status == 0);
  CHECK(h.err.find("recommend device_buffer_size") == std::string::npos);
  CHECK(h.err.find("with --scenario, also advise's settings") != std::string::npos);
  CHECK(h.err.find("attention, topk, step") != std::string::npos);
  CHECK(h.err.find("--calibrate") != std::string::npos);
  // trace gen --help spells out each preset's values.
  const Run g = run("trace gen --help", dir);
  REQUIRE(g.status == 0);
  CHECK(g.out.find("tiny: 2 requests x 12 steps x 3 layers, top_k 16") != std::string::npos);
  CHECK(g.out.find("dsv32: 2 requests x 64 steps x 61 layers, top_k 2048,") != std::string::npos);
  CHECK(g.out.find("low-overlap:") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("bad numbers and lists are named with the flag, the value and what was expected") {
  const fs::path dir = hisparse::test::scratch_dir("messages_values");
  // An integer the flag's type cannot hold: the flag, the value and the type's range (boost said only "is invalid").
  const Run k = run("trace gen --preset tiny --top-k 1000000000000 --out " + (dir / "t.hstrace").string(), dir);
  CHECK(k.status != 0);
  CHECK(k.err.find("--top-k '1000000000000' is not an integer in [-2147483648, 2147483647]") != std::string::npos);
  CHECK(k.err.find("is invalid") == std::string::npos);
  const Run w = run("plan --scenario dsv32-8xh200-1tb --device-buffer-size x --out " + (dir / "p").string(), dir);
  CHECK(w.status != 0);
  CHECK(w.err.find("--device-buffer-size 'x' is not an integer in [") != std::string::npos);
  const Run d = run("plan --scenario dsv32-8xh200-1tb --tpot-slo-ms fast --out " + (dir / "p").string(), dir);
  CHECK(d.status != 0);
  CHECK(d.err.find("--tpot-slo-ms 'fast' is not a number") != std::string::npos);
  // NaN parses as a double: the SLO check names the flag and what it expects, and does not blame the YAML.
  const Run n = run("plan --scenario dsv32-8xh200-1tb --tpot-slo-ms nan --out " + (dir / "p").string(), dir);
  CAPTURE(n.err);
  CHECK(n.status != 0);
  CHECK(n.err.find("--tpot-slo-ms nan") != std::string::npos);
  CHECK(n.err.find("expected a number of ms in [0.01, 1e6]") != std::string::npos);
  CHECK(n.err.find(".yaml") == std::string::npos);
  // An empty list item is a typo, refused rather than read as a shorter list.
  for (const char* sizes : {"32,,64", "32,64,", ",32"}) {
    CAPTURE(sizes);
    const Run b = run(std::string("replay --trace traces/bundled/default.hstrace --buffer-sizes ") + sizes, dir);
    CHECK(b.status != 0);
    CHECK(b.err.find("--buffer-sizes '" + std::string(sizes) + "' has an empty item") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("a binary --workload is refused as such; a trace of another model's depth is said to be one") {
  const fs::path dir = hisparse::test::scratch_dir("messages_inputs");
  // A top-k trace passed as the workload: named as a binary file with what a workload is, not parsed as YAML.
  const std::string trace = (dir / "t61.hstrace").string();
  REQUIRE(run("trace gen --preset dsv32 --requests 1 --steps 3 --out " + trace, dir).status == 0);
  const Run b = run("simulate --scenario dsv32-8xh200-1tb --workload " + trace + " --out " + (dir / "s").string(), dir);
  CHECK(b.status != 0);
  CHECK(b.err.find("is a binary file (a NUL byte at offset") != std::string::npos);
  CHECK(b.err.find("expected a workload YAML") != std::string::npos);
  // A 61-layer trace advised for 78-layer GLM-5.1: a warning names both depths (the same trace for a 61-layer
  // DeepSeek-V3.2 deployment says nothing).
  const Run g = run("replay --trace " + trace + " --buffer-sizes 4096 --policy sglang-lru --scenario glm51-8xh200-colocated "
                    "--quiet --seq-lens 32K", dir);
  CAPTURE(g.err);
  CHECK(g.status == 0);
  CHECK(g.out.find("warning: trace " + trace + " has 61 layers but model") != std::string::npos);
  CHECK(g.out.find("has 78") != std::string::npos);
  const Run s = run("replay --trace " + trace + " --buffer-sizes 4096 --policy sglang-lru --scenario dsv32-8xh200-1tb "
                    "--quiet --seq-lens 32K", dir);
  CHECK(s.status == 0);
  CHECK(s.out.find("warning: trace") == std::string::npos);
  fs::remove_all(dir);
}
