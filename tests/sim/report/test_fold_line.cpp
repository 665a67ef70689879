// @brief The first screen's folded provenance lines: short, paths as file names, the same wherever the tree lives,
// and unchanged with --verbose.
#include <doctest/doctest.h>

#include <string>

#include "sim/report/fold_line.h"

using namespace hisparse::sim;

TEST_CASE("fold_line: a long provenance line becomes one short line ending in the --verbose hint") {
  const std::string line = "cost model: cost terms /a/b/scenarios/cost_model/sglang-hopper.yaml (1 assumed, 8 measured); "
                           "PCIe and swap-in copy calibrated (NVIDIA H200, 2026-11-23, /a/b/scenarios/calibration/"
                           "h200-device.yaml); swap-in kernel: SGLang's (calibrated: fitted to the kernel measured on an "
                           "H200, /a/b/scenarios/calibration/h200-swapin.yaml)";
  REQUIRE(line.size() > kFoldWidth);
  const std::string folded = fold_line(line, false);
  // Expected: the paths' directories dropped, at most kFoldWidth bytes of text, then the hint.
  const std::string tail = " … (--verbose)";
  REQUIRE(folded.size() > tail.size());
  CHECK(folded.substr(folded.size() - tail.size()) == tail);
  CHECK(folded.size() - tail.size() <= kFoldWidth);
  CHECK(folded.rfind("cost model: cost terms sglang-hopper.yaml (1 assumed, 8 measured); ", 0) == 0);
  CHECK(folded.find("/a/b") == std::string::npos);
  // The fold reads the text, not where the tree lives: another root gives the same line.
  std::string moved = line;
  for (size_t at; (at = moved.find("/a/b/")) != std::string::npos;) moved.replace(at, 5, "/work/somewhere/else/");
  CHECK(fold_line(moved, false) == folded);
  // --verbose: the line as it was.
  CHECK(fold_line(line, true) == line);
}

TEST_CASE("fold_line: a short line keeps its text; relative paths and ratios like H/K are not paths") {
  CHECK(fold_line("miss model: surface (/x/y/z.yaml), n/H and H/K at traces/real/a.hstr", false) ==
        "miss model: surface (z.yaml), n/H and H/K at traces/real/a.hstr");
}
