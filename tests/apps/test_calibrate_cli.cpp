// @brief `hisparse bench --calibrate` from stored rows: one YAML per device with the swap-in terms and the per-op
// models under `step:`, each with its fit, held-out error and repo-relative provenance; plan/simulate load both
// from that one file.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_test_util.h"
#include "core/error.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/step_calibration.h"

using namespace hisparse;

TEST_CASE("bench --calibrate --from-csv --step-csv: one file carries every measured term, and runs use it") {
  const auto dir = test::scratch_dir("calibrate_cli");
  const std::string out = (dir / "h200.yaml").string();
  // Run from the source tree so the provenance paths come out repo-relative.
  const std::string cmd = "cd " + std::string(HISPARSE_SOURCE_DIR) + " && " + test::cli() +
                          " bench --calibrate --from-csv bench/results/calibration_h200_2026-11-23/h200-2026-11-23.csv"
                          " --step-csv bench/results/calibration_h200_2026-11-23/h200-2026-11-23-step.csv"
                          " --date 2026-11-23 --out " + out + " > " + (dir / "log.txt").string() + " 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);  // every held-out error within 10 % on the shipped H200 rows
  const std::string text = test::slurp(out);
  CHECK(text.find("made_from: \"bench/results/calibration_h200_2026-11-23/h200-2026-11-23.csv\"") != std::string::npos);
  CHECK(text.find("\nstep:\n") != std::string::npos);
  CHECK(text.find("held_out_max_error") != std::string::npos);
  const sim::Calibration c = sim::load_calibration(out);
  CHECK(c.device == "NVIDIA H200");
  CHECK(c.copy_mode == "fused");
  CHECK(sim::has_step_section(out));
  const sim::StepCalibration s = sim::load_step_calibration(out);
  CHECK(s.device == c.device);
  CHECK(s.max_check_error("layer", true) <= 0.10);
  CHECK(s.max_check_error("family", true) <= 0.10);
  // plan takes both parts from the one file named on the command line (--verbose: the cost line in full, paths too).
  const std::string plan = "cd " + std::string(HISPARSE_SOURCE_DIR) + " && " + test::cli() +
                           " plan --scenario dsv32-8xh200-1tb --verbose --calibration " + out + " --out " +
                           (dir / "plan").string() + " --no-plots > " + (dir / "plan.txt").string() + " 2>&1";
  REQUIRE(std::system(plan.c_str()) == 0);
  const std::string printed = test::slurp(dir / "plan.txt");
  CHECK(printed.find("calibrated per op (NVIDIA H200, 2026-11-23, " + out) != std::string::npos);
  // A step section that is not a mapping is refused, naming the file.
  const std::string bad = (dir / "bad.yaml").string();
  {
    std::ofstream f(bad);
    f << text.substr(0, text.find("\nstep:\n")) << "\nstep: 3\n";
  }
  CHECK_THROWS_WITH_AS(sim::load_step_calibration(bad), doctest::Contains("step"), Error);
}
