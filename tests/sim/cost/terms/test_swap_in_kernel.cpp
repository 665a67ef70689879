// @brief Whose swap-in kernel prices the plan and miss copy: SGLang's (fitted to its measured rows) by default for an
// SGLang deployment, this project's on request; the choice moves the plan time by the measured difference.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/api/scenario_setup.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/calibration_fit.h"
#include "sim/cost/step/decode_cost_model.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kDir = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/";

ScenarioSetup setup(std::optional<std::string> kernel) {
  ScenarioChoice c;
  c.scenario = "dsv32-8xh200-1tb";
  c.overrides.swap_in_kernel = kernel;
  return load_scenario_setup(c, "test");
}

/// The measured fused swap-in at batch 1, no misses, H 4096, K 2048 of a calibration file.
const CalibrationPoint& batch1_plan(const Calibration& c) {
  for (const CalibrationPoint& p : c.points)
    if (p.op == "swap-in" && p.mode == "fused" && p.batch == 1 && p.rows == 0 && p.H == 4096 && p.K == 2048) return p;
  throw_error("{}: no batch-1 plan point", c.source);
}

}  // namespace

TEST_CASE("swap-in kernel: an SGLang deployment is priced with SGLang's kernel unless told otherwise") {
  // Deployments run SGLang unless they say otherwise; its kernel is the default swap-in kernel.
  const DeploymentSpec d = load_scenario("dsv32-8xh200-1tb").deployment;
  CHECK(d.engine == "sglang");
  CHECK(d.swap_in_kernel_used() == "sglang");
  const ScenarioSetup sg = setup(std::nullopt);
  CHECK(sg.cost.swap_in_kernel == "sglang");
  CHECK(sg.cost_line.find("swap-in kernel: SGLang's (calibrated: fitted to SGLang's kernel measured on NVIDIA H200") !=
        std::string::npos);
  const ScenarioSetup pr = setup("project");
  CHECK(pr.cost.swap_in_kernel == "project");
  CHECK(pr.cost_line.find("swap-in kernel: this project's") != std::string::npos);
  // The term is in the provenance table with its kind.
  bool listed = false;
  for (const TermSource& t : sg.cost.sources)
    if (t.term == "swap_in_kernel") listed = t.value == "sglang" && t.kind == "calibrated";
  CHECK(listed);
  // A deployment of this project's engine takes this project's kernel; a swap_in_kernel key overrides the engine.
  const std::string base = kDir + "deployments/dsv32-8xh200-1tb.yaml";
  std::ifstream in(base);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto tmp = std::filesystem::temp_directory_path();
  std::ofstream(tmp / "hisparse_engine_project.yaml") << text << "engine: project\n";
  CHECK(load_deployment_spec((tmp / "hisparse_engine_project.yaml").string()).swap_in_kernel_used() == "project");
  std::ofstream(tmp / "hisparse_engine_both.yaml") << text << "engine: project\nswap_in_kernel: sglang\n";
  CHECK(load_deployment_spec((tmp / "hisparse_engine_both.yaml").string()).swap_in_kernel_used() == "sglang");
  std::ofstream(tmp / "hisparse_engine_bad.yaml") << text << "swap_in_kernel: vllm\n";
  CHECK_THROWS_WITH_AS(load_deployment_spec((tmp / "hisparse_engine_bad.yaml").string()),
                       doctest::Contains("swap_in_kernel"), Error);
  ScenarioChoice bad;
  bad.scenario = "dsv32-8xh200-1tb";
  bad.overrides.swap_in_kernel = "vllm";
  CHECK_THROWS_WITH_AS(load_scenario_setup(bad, "plan"), doctest::Contains("--swap-in-kernel vllm"), Error);
}

TEST_CASE("swap-in kernel: SGLang's at batch 1 costs the measured difference more than this project's, per layer") {
  const Calibration sg = load_calibration(kDir + "calibration/h200-sglang-swapin-2026-11-25.yaml");
  const Calibration pr = load_calibration(kDir + "calibration/h200-device-2026-11-23.yaml");
  const double sg_us = batch1_plan(sg).measured_us, pr_us = batch1_plan(pr).measured_us;  // 17.7 and 9.8 µs
  const ScenarioSetup a = setup(std::nullopt), b = setup("project");
  const int64_t H = a.scenario.deployment.hisparse.device_buffer_size;
  const double plan_sg = a.cost.swap_in_cost.plan_ns(1, H) * 1e-3, plan_pr = b.cost.swap_in_cost.plan_ns(1, H) * 1e-3;
  // Each kernel's plan at batch 1 is its fit's (within the 10 % the calibrations hold the points to)...
  CHECK(std::fabs(plan_sg - sg_us) <= 0.10 * sg_us);
  CHECK(std::fabs(plan_pr - pr_us) <= 0.10 * pr_us);
  // ...so the choice moves the plan by the measured difference, within the two fits' errors together.
  CHECK(std::fabs((plan_sg - plan_pr) - (sg_us - pr_us)) <= 0.10 * (sg_us + pr_us));
  // And the step's swap-in term moves by that per layer.
  GpuBatch batch;
  batch.requests = 1;
  batch.sum_n = 32768;
  batch.sum_attended = 2048;
  batch.slow_path = 1;
  const SimTime t_sg = DecodeCostModel(a.scenario, a.cost, true).gpu_phases(batch).swap_in;
  const SimTime t_pr = DecodeCostModel(b.scenario, b.cost, true).gpu_phases(batch).swap_in;
  const int layers = a.scenario.model.layers;
  CHECK(t_sg - t_pr == a.cost.swap_in_cost.plan_ns(1, H) * layers - b.cost.swap_in_cost.plan_ns(1, H) * layers);
  CHECK(t_sg > t_pr);
}

TEST_CASE("swap-in kernel: the shipped SGLang fits reproduce from the measured rows and hold their held-out points") {
  for (const char* gpu : {"h200", "h100"}) {
    CAPTURE(gpu);
    const Calibration shipped = load_calibration(kDir + "calibration/" + std::string(gpu) + "-sglang-swapin-2026-11-25.yaml");
    const CalibrationInput in =
        read_bench_csv(kDir + "measurements/sglang_swapin_" + std::string(gpu) + "_2026-11-25.csv");
    // `split` rows read as the separate copy; the block-512/1024 rows (another launch configuration) left out.
    int separate = 0;
    for (const CalibrationPoint& p : in.points) separate += p.mode == "separate";
    CHECK(separate > 0);
    CHECK(in.points.size() == shipped.points.size());
    FitOptions o;
    o.small_batch_max = 0;
    const Calibration refit = fit_calibration(in, o);
    CHECK(refit.fused.plan_fixed_ns == doctest::Approx(shipped.fused.plan_fixed_ns).epsilon(1e-3));
    CHECK(refit.fused.row_bytes_per_s == doctest::Approx(shipped.fused.row_bytes_per_s).epsilon(1e-3));
    CHECK(max_relative_error(shipped, "held-out", "fused") <= 0.10);
  }
}
