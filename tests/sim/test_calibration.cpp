// @brief Calibration: the fit recovers known parameters, the committed H200 sweep predicts held-out sizes within 10 %,
// the YAML round-trips and is strict, and the simulator charges exactly the calibrated swap-in + copy time.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <fmt/core.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration.h"
#include "sim/calibration_fit.h"
#include "sim/decode_cost_model.h"
#include "sim/output_file.h"
#include "sim/serving_simulation.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

const std::string kSweep = std::string(HISPARSE_SOURCE_DIR) + "/bench/results/swap_in_gather_backup_h200.csv";
const std::string kCommitted = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h200-2026-11-21.yaml";

SwapInCopyCost known_cost() {
  SwapInCopyCost c;
  c.calibrated = true;
  c.plan_fixed_ns = 12000;
  c.plan_per_request_ns = 30;
  c.copy_fixed_ns = 1500;
  c.row_bytes_per_s = 40e9;
  c.per_request_row_bytes_per_s = 15e9;
  return c;
}

/// Points measured exactly as the model says (no noise), over batch x miss rate, plus gather and backup rows.
CalibrationInput synthetic_input(const SwapInCopyCost& c) {
  CalibrationInput in;
  in.device = "synthetic";
  in.h2d_bulk_bytes_per_s = 50e9;
  in.d2h_bulk_bytes_per_s = 48e9;
  for (int32_t B : {1, 2, 4, 8, 32, 128})
    for (double miss : {0.0, 0.1, 0.3, 0.6}) {
      CalibrationPoint p;
      p.op = "swap-in";
      p.mode = "fused";
      p.batch = B;
      p.H = 4096;
      p.K = 2048;
      p.miss_rate = miss;
      p.rows = static_cast<int64_t>(std::lround(miss * 2048)) * B;
      p.measured_us = static_cast<double>(predict_swap_in_copy_ns(c, in.h2d_bulk_bytes_per_s, 1152, B, 4096, p.rows)) * 1e-3;
      in.points.push_back(p);
    }
  for (int64_t rows : {64, 1024, 16384, 65536}) {
    CalibrationPoint p;
    p.op = "backup";
    p.mode = "zero-copy";
    p.rows = rows;
    p.measured_us = (3000 + static_cast<double>(rows) * 1152 / 45e9 * 1e9) * 1e-3;  // 3 µs + rows at 45 GB/s
    in.points.push_back(p);
  }
  return in;
}

}  // namespace

TEST_CASE("the fit recovers the parameters that generated the points") {
  const SwapInCopyCost truth = known_cost();
  FitOptions o;
  o.fit_batches = {1, 8, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  const Calibration c = fit_calibration(synthetic_input(truth), o);
  // Expected: every term within 2 % (the points are exact up to 1 ns of rounding); held-out error < 0.5 %.
  CHECK(c.fused.plan_fixed_ns == doctest::Approx(truth.plan_fixed_ns).epsilon(0.02));
  CHECK(c.fused.plan_per_request_ns == doctest::Approx(truth.plan_per_request_ns).epsilon(0.02));
  CHECK(c.fused.copy_fixed_ns == doctest::Approx(truth.copy_fixed_ns).epsilon(0.02));
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(truth.row_bytes_per_s).epsilon(0.02));
  CHECK(c.fused.per_request_row_bytes_per_s == doctest::Approx(truth.per_request_row_bytes_per_s).epsilon(0.02));
  CHECK(c.backup.fixed_ns == doctest::Approx(3000).epsilon(0.02));
  CHECK(c.backup.row_bytes_per_s == doctest::Approx(45e9).epsilon(0.02));
  CHECK(!c.separate.calibrated);
  CHECK(max_relative_error(c, "held-out") < 0.005);
  int held = 0;
  for (const auto& p : c.points) held += p.set == "held-out";
  CHECK(held == 24 - 9);  // 6 x 4 swap-in points, 3 x 3 fitted
}

TEST_CASE("without a per-request bound in the data the fit leaves it unbounded") {
  SwapInCopyCost truth = known_cost();
  truth.per_request_row_bytes_per_s = 0;
  FitOptions o;
  o.fit_batches = {1, 8, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  const Calibration c = fit_calibration(synthetic_input(truth), o);
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(40e9).epsilon(0.02));
  // Expected: any bound is either 0 (none) or so high that it never binds at batch 1.
  CHECK((c.fused.per_request_row_bytes_per_s == 0 || c.fused.per_request_row_bytes_per_s >= 39e9));
  CHECK(max_relative_error(c, "held-out") < 0.005);
}

TEST_CASE("committed H200 sweep: held-out batch sizes and miss rates within 10 %") {
  const CalibrationInput in = read_bench_csv(kSweep);
  CHECK(in.device == "NVIDIA H200");
  FitOptions o;  // fit on batches 1, 16, 128 x miss 0, 20, 50 %; held out: batches 4, 64, 100 and miss 5 %
  o.date = "2026-11-21";
  o.made_from = "bench/results/swap_in_gather_backup_h200.csv";
  const Calibration c = fit_calibration(in, o);
  MESSAGE("\n" << calibration_table(c));
  int held = 0;
  for (const auto& p : c.points) held += p.set == "held-out";
  CHECK(held >= 20);
  CHECK(max_relative_error(c, "held-out", "fused") <= 0.10);
  CHECK(max_relative_error(c, "held-out", "separate") <= 0.10);
  CHECK(max_relative_error(c, "fit") <= 0.10);
  // Plausibility of what was measured: rows below bulk rate, bulk near PCIe Gen5 x16 (~55 GB/s).
  CHECK(c.fused.row_bytes_per_s < c.h2d_bulk_bytes_per_s);
  CHECK(c.h2d_bulk_bytes_per_s == doctest::Approx(55e9).epsilon(0.1));
  // The committed file is this fit (regenerate it with the command in scenarios/calibration/README.md).
  const Calibration committed = load_calibration(kCommitted);
  CHECK(committed.device == c.device);
  CHECK(committed.fused.plan_fixed_ns == doctest::Approx(c.fused.plan_fixed_ns).epsilon(1e-4));
  CHECK(committed.fused.row_bytes_per_s == doctest::Approx(c.fused.row_bytes_per_s).epsilon(1e-4));
  CHECK(committed.fused.per_request_row_bytes_per_s == doctest::Approx(c.fused.per_request_row_bytes_per_s).epsilon(1e-4));
  CHECK(committed.separate.copy_fixed_ns == doctest::Approx(c.separate.copy_fixed_ns).epsilon(1e-3));
  CHECK(committed.points.size() == c.points.size());
}

TEST_CASE("calibration YAML round-trips and rejects bad input") {
  const Calibration c = fit_calibration(read_bench_csv(kSweep), FitOptions{});
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_roundtrip.yaml";
  write_file_atomically(path, calibration_yaml(c));
  const Calibration back = load_calibration(path);
  CHECK(back.device == c.device);
  CHECK(back.copy_mode == "fused");
  CHECK(back.h2d_bulk_bytes_per_s == doctest::Approx(c.h2d_bulk_bytes_per_s).epsilon(1e-4));
  CHECK(back.fused.plan_per_request_ns == doctest::Approx(c.fused.plan_per_request_ns).epsilon(1e-3));
  CHECK(back.fused.row_bytes_per_s == doctest::Approx(c.fused.row_bytes_per_s).epsilon(1e-4));
  CHECK(back.backup.fixed_ns == doctest::Approx(c.backup.fixed_ns).epsilon(1e-3));
  CHECK(back.fit_batches == c.fit_batches);
  REQUIRE(back.points.size() == c.points.size());
  CHECK(back.points[5].measured_us == doctest::Approx(c.points[5].measured_us).epsilon(1e-4));
  CHECK(back.points[5].set == c.points[5].set);
  auto rejects = [&](const std::string& text, const std::string& needle) {
    write_file_atomically(path, text);
    try {
      load_calibration(path);
      FAIL("accepted: " << text);
    } catch (const hisparse::Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  const std::string good = calibration_yaml(c);
  rejects(good + "surprise: 1\n", "surprise");
  rejects("device: x\ndate: y\nbulk: {h2d_bytes_per_s: 5e10, d2h_bytes_per_s: 5e10}\nswap_in: {}\n", "swap_in.fused");
  rejects("device: x\ndate: y\nbulk: {h2d_bytes_per_s: -1, d2h_bytes_per_s: 5e10}\nswap_in: {}\n", "h2d_bytes_per_s");
  std::remove(path.c_str());
}

TEST_CASE("the simulator charges the calibrated swap-in + copy time per layer") {
  Scenario sc = load_scenario("dsv32-8xh200-1tb");
  CostParams params;
  const Calibration c = load_calibration(kCommitted);
  apply_calibration(c, &sc, &params);
  CHECK(sc.hardware.pcie.h2d_bulk_bytes_per_s == c.h2d_bulk_bytes_per_s);
  CHECK(params.swap_in_cost.calibrated);
  const int64_t H = sc.deployment.hisparse.device_buffer_size, L = sc.model.layers;
  // Plan: the cost model's hit-detection phase is the calibrated plan of every layer.
  const DecodeCostModel cm(sc, params, true);
  GpuBatch b;
  b.requests = 16;
  b.sum_n = b.sum_attended = 16 * 20000.0;
  b.slow_path = 16;
  CHECK(cm.gpu_phases(b).swap_in == L * c.fused.plan_ns(16, H));
  // Copy: a lone request with an empty buffer (as in test_serving) loads K-1 rows per layer; on an idle link the
  // step's swap-in + h2d is L x the one-call prediction (to within the 1-ns rounding of bundling the layers).
  ServingOptions opt;
  opt.cost = params;
  Workload w;
  w.name = "one";
  w.requests.push_back(RequestSpec{0, 1000, 10000, 3});
  const ServingResult r = run_serving(sc, w, opt);
  REQUIRE(r.steps.size() == 2);
  const int64_t rows = sc.deployment.hisparse.top_k - 1;
  const SimTime per_layer = predict_swap_in_copy_ns(c.fused, sc.hardware.pcie.h2d_bulk_bytes_per_s, 1152, 1, H, rows);
  const SimTime charged = r.steps[0].slowest.swap_in + r.steps[0].slowest.h2d;
  CHECK(std::llabs(charged - L * per_layer) <= L);
}

TEST_CASE("the committed calibration predicts a later sweep on the same device within 10 %") {
  // Expected: the 2026-11-21 fit (older kernel build, another process) still predicts every swap-in point that
  // `hisparse bench --calibrate` measured on 2026-11-22 within 10 %; both committed files load.
  const Calibration c = load_calibration(kCommitted);
  const std::string later = std::string(HISPARSE_SOURCE_DIR) + "/bench/results/calibration_h200_2026-11-22.csv";
  const CalibrationInput in = read_bench_csv(later);
  CHECK(load_calibration(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h200-2026-11-22.yaml").device == c.device);
  int n = 0;
  double worst = 0;
  for (const auto& p : in.points) {
    if (p.op != "swap-in") continue;
    const SwapInCopyCost& s = p.mode == "separate" ? c.separate : c.fused;
    const double pred = static_cast<double>(predict_swap_in_copy_ns(s, c.h2d_bulk_bytes_per_s, c.row_bytes, p.batch, p.H, p.rows)) * 1e-3;
    worst = std::max(worst, std::fabs(pred - p.measured_us) / p.measured_us);
    ++n;
  }
  MESSAGE("2026-11-21 calibration on the 2026-11-22 sweep: " << n << " points, max |error| " << 100 * worst << " %");
  CHECK(n >= 30);
  CHECK(worst <= 0.10);
}
