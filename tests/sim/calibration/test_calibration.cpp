// @brief Calibration: the fit recovers known parameters, the committed H200 sweep predicts held-out sizes within 10 %,
// the YAML round-trips and is strict, and the simulator charges exactly the calibrated swap-in + copy time.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/calibration_fit.h"
#include "sim/cost/step/decode_cost_model.h"
#include "core/io/output_file.h"
#include "sim/serving/serving_simulation.h"
#include "tests/sim/calibration/calibration_test_support.h"

using namespace hisparse;
using namespace hisparse::sim;
using namespace hisparse::sim::calibration_test;

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


}  // namespace

namespace {


}  // namespace

TEST_CASE("the fit recovers the parameters that generated the points, to the simulator's whole nanoseconds") {
  const SwapInCopyCost truth = known_cost();
  FitOptions o;
  o.fit_batches = {1, 8, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  const Calibration c = fit_calibration(synthetic_input(truth), o);
  // Expected: the points are the simulator's times, each term rounded up to a whole ns, so each fixed term comes
  // back within 1 ns of the truth and the rates within 1e-4; held-out error < 0.05 % (up to 3 ns of rounding on
  // calls of 12 µs and more).
  CHECK(std::fabs(c.fused.plan_fixed_ns - truth.plan_fixed_ns) <= 1.0);
  CHECK(c.fused.plan_per_request_ns == doctest::Approx(truth.plan_per_request_ns).epsilon(1e-4));
  CHECK(std::fabs(c.fused.copy_fixed_ns - truth.copy_fixed_ns) <= 1.0);
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(truth.row_bytes_per_s).epsilon(1e-4));
  CHECK(c.fused.per_request_row_bytes_per_s == doctest::Approx(truth.per_request_row_bytes_per_s).epsilon(1e-4));
  CHECK(c.backup.fixed_ns == doctest::Approx(3000).epsilon(1e-9));  // the backup rows are not rounded
  CHECK(c.backup.row_bytes_per_s == doctest::Approx(45e9).epsilon(1e-9));
  CHECK(!c.separate.calibrated);
  CHECK(max_relative_error(c, "held-out") < 5e-4);
  int held = 0;
  for (const auto& p : c.points) held += p.set == "held-out";
  CHECK(held == 24 - 9);  // 6 x 4 swap-in points, 3 x 3 fitted
}

TEST_CASE("exact data are fitted exactly: the linear copy form's constants, both rates included") {
  const SwapInCopyCost truth = known_cost();
  // Points from the model's formula in real numbers (no rounding):
  //   T = plan_fixed + plan_per_request x B + copy_fixed + rows x 1152 B / min(R, B x R_req)   (rows > 0)
  // with R = 40 GB/s and R_req = 15 GB/s, so B = 1 copies at 15 GB/s, B = 8 and 128 at 40 GB/s.
  CalibrationInput in = synthetic_input(truth);
  for (CalibrationPoint& p : in.points) {
    if (p.op != "swap-in") continue;
    const double B = p.batch, rate = std::min(truth.row_bytes_per_s, B * truth.per_request_row_bytes_per_s);
    const double copy_ns = p.rows > 0 ? truth.copy_fixed_ns + static_cast<double>(p.rows) * 1152 / rate * 1e9 : 0.0;
    p.measured_us = (truth.plan_fixed_ns + truth.plan_per_request_ns * B + copy_ns) * 1e-3;
  }
  FitOptions o;
  o.fit_batches = {1, 8, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  const Calibration c = fit_calibration(in, o);
  // Expected: every constant to 1e-9 (the search alone left the copy's fixed term 2 % off); the held-out points are
  // predicted in the simulator's whole ns, so their error is that rounding's: < 1e-4.
  CHECK(c.fused.plan_fixed_ns == doctest::Approx(truth.plan_fixed_ns).epsilon(1e-9));
  CHECK(c.fused.plan_per_request_ns == doctest::Approx(truth.plan_per_request_ns).epsilon(1e-9));
  CHECK(c.fused.copy_fixed_ns == doctest::Approx(truth.copy_fixed_ns).epsilon(1e-9));
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(truth.row_bytes_per_s).epsilon(1e-9));
  CHECK(c.fused.per_request_row_bytes_per_s == doctest::Approx(truth.per_request_row_bytes_per_s).epsilon(1e-9));
  CHECK(max_relative_error(c, "held-out") < 1e-4);
}

TEST_CASE("without a per-request bound in the data the fit leaves it unbounded") {
  SwapInCopyCost truth = known_cost();
  truth.per_request_row_bytes_per_s = 0;
  FitOptions o;
  o.fit_batches = {1, 8, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  const Calibration c = fit_calibration(synthetic_input(truth), o);
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(40e9).epsilon(1e-4));  // whole-ns points: 1e-4
  // Expected: any bound is either 0 (none) or so high that it never binds at batch 1.
  CHECK((c.fused.per_request_row_bytes_per_s == 0 || c.fused.per_request_row_bytes_per_s >= 39e9));
  CHECK(max_relative_error(c, "held-out") < 0.005);
}

TEST_CASE("committed H200 sweep: held-out batch sizes and miss rates within 10 %") {
  const CalibrationInput in = read_bench_csv(kSweep);
  CHECK(in.device == "NVIDIA H200");
  const Calibration committed = load_calibration(kCommitted);
  FitOptions o;  // as committed: batches 1, 16, 128 x miss 0, 20, 50 %; held out: batches 4, 64, 100 and miss 5 %
  o.fit_batches = committed.fit_batches;
  REQUIRE(o.fit_batches == std::vector<int32_t>{1, 16, 128});
  o.date = "2026-11-21";
  o.made_from = "bench/results/swap_in_gather_backup_h200.csv";
  CHECK(in.small_batch_max == 0);  // no swap-in-kernel row: one regime, as this file was fitted
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
  CHECK(committed.device == c.device);
  CHECK(committed.fused.plan_fixed_ns == doctest::Approx(c.fused.plan_fixed_ns).epsilon(1e-4));
  CHECK(committed.fused.row_bytes_per_s == doctest::Approx(c.fused.row_bytes_per_s).epsilon(1e-4));
  CHECK(committed.fused.per_request_row_bytes_per_s == doctest::Approx(c.fused.per_request_row_bytes_per_s).epsilon(1e-4));
  CHECK(committed.separate.copy_fixed_ns == doctest::Approx(c.separate.copy_fixed_ns).epsilon(1e-3));
  CHECK(committed.points.size() == c.points.size());
}

TEST_CASE("cluster-kernel H200 sweep: two regimes, the charged (fused) copy within 10 % on held-out points") {
  const std::string sweep = std::string(HISPARSE_SOURCE_DIR) + "/bench/results/gpu_check_h200_48a365c/bench.csv";
  const std::string file = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h200-2026-11-22-cluster.yaml";
  const CalibrationInput in = read_bench_csv(sweep);
  CHECK(in.small_batch_max == 8);  // the bench's swap-in-kernel row
  CHECK(in.cluster_blocks == 0);   // not recorded then: the default cluster of 8 blocks per request
  FitOptions o;                    // the defaults of `bench --calibrate`: auto fit batches, the fused copy
  CHECK(o.copy_mode == "fused");
  o.date = "2026-11-22";
  const Calibration c = fit_calibration(in, o);
  MESSAGE("\n" << calibration_table(c));
  CHECK(c.fit_batches == std::vector<int32_t>{1, 4, 16, 128});
  CHECK(c.fit_H == std::vector<int32_t>{4096});  // one H: every H fitted, as before the H sweep
  CHECK(max_relative_error(c, "held-out", "fused") <= 0.10);
  CHECK(max_relative_error(c, "fit", "fused") <= 0.10);
  CHECK(max_relative_error(c, "held-out", "separate") <= 0.10);
  // The cluster kernel's fused copy runs in latency rounds (32 rows per block, the coldest of 8 LRU slices busiest):
  // a round trip of about 1.6 us; the linear form the file charged before missed the held-out points by 20.8 %.
  CHECK(c.fused.small.copy_round_ns == doctest::Approx(1600).epsilon(0.15));
  CHECK(c.fused.small.copy_slices == 8);
  CHECK(c.fused.small.copy_rows_per_round == 32);
  CHECK(c.fused.large().copy_round_ns == 0);  // the one-block kernel: linear, as before
  CHECK(c.separate.small.copy_round_ns == 0);
  FitOptions linear = o;
  linear.copy_rounds = false;
  CHECK(max_relative_error(fit_calibration(in, linear), "held-out", "fused") > 0.15);
  const Calibration committed = load_calibration(file);
  CHECK(committed.copy_mode == "fused");
  CHECK(committed.swap_in().small_batch_max == 8);
  CHECK(committed.fused.small.copy_round_ns == doctest::Approx(c.fused.small.copy_round_ns).epsilon(1e-3));
  CHECK(committed.fused.small.row_bytes_per_s == doctest::Approx(c.fused.small.row_bytes_per_s).epsilon(1e-3));
  CHECK(committed.fused.plan_fixed_ns == doctest::Approx(c.fused.plan_fixed_ns).epsilon(1e-3));
  CHECK(committed.separate.plan_fixed_ns == doctest::Approx(c.separate.plan_fixed_ns).epsilon(1e-3));
  CHECK(committed.separate.row_bytes_per_s == doctest::Approx(c.separate.row_bytes_per_s).epsilon(1e-3));
}

TEST_CASE("H100 sweep: the fused copy's held-out error is reported (the large-batch kernel's, above 10 %)") {
  const std::string sweep = std::string(HISPARSE_SOURCE_DIR) + "/bench/results/gpu_check_h100_2026-11-23/bench.csv";
  const Calibration c = fit_calibration(read_bench_csv(sweep), FitOptions{});
  MESSAGE("\n" << calibration_table(c));
  // The small-batch (cluster) kernel's points are within 5 %; the worst held-out points are the one-block kernel's
  // (B = 16 at 5 %, and B = 64 at 20 %, where the fused call measured 15 % above the separate one at the same rows).
  double small_worst = 0;
  for (const auto& p : c.points)
    if (p.op == "swap-in" && p.mode == "fused" && p.set == "held-out" && p.batch <= 8)
      small_worst = std::max(small_worst, std::fabs(p.predicted_us - p.measured_us) / p.measured_us);
  CHECK(small_worst <= 0.05);
  CHECK(max_relative_error(c, "held-out", "separate") <= 0.10);
  const Calibration committed =
      load_calibration(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/h100-2026-11-23.yaml");
  CHECK(committed.copy_mode == "fused");
  CHECK(committed.fused.small.copy_round_ns == doctest::Approx(c.fused.small.copy_round_ns).epsilon(1e-3));
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
  // Plan: the cost model's hit-detection phase is the calibrated plan of every layer, plus SGLang's clear of the
  // output slots before each (DecodeCostModel::hisparse_output_clear_ns).
  const DecodeCostModel cm(sc, params, true);
  GpuBatch b;
  b.requests = 16;
  b.sum_n = b.sum_attended = 16 * 20000.0;
  b.slow_path = 16;
  CHECK(cm.gpu_phases(b).swap_in == L * c.fused.plan_ns(16, H) + cm.hisparse_output_clear_ns(16));
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
  const SimTime charged = r.steps[0].slowest.swap_in + r.steps[0].slowest.h2d - cm.hisparse_output_clear_ns(1);
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

TEST_CASE("two kernel regimes: each is recovered from its own points and held-out sizes are predicted") {
  const SwapInCopyCost truth = two_regime_cost();
  const CalibrationInput in = synthetic_input(truth, {1, 2, 4, 8, 16, 32, 64, 128});
  FitOptions o;  // default batches: each regime's extremes, 1, 8 | 16, 128 around Bc = 8
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  o.copy_rounds = false;  // a linear law with a per-request bound in both regimes (the rounds form has none)
  const Calibration c = fit_calibration(in, o);
  REQUIRE(c.fused.small_batch_max == 8);
  CHECK(c.fit_batches == std::vector<int32_t>{1, 8, 16, 128});
  // Expected: the points are the simulator's times (each term rounded up to a whole ns), so every fixed term of both
  // regimes comes back within 2 ns and every rate within 1e-3; fit and held-out errors < 0.05 % (a few ns of
  // rounding on calls of 10 µs and more).
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    const SwapInRegimeCost& got = r ? c.fused.small : c.fused.large();
    const SwapInRegimeCost& want = r ? truth.small : truth.large();
    CHECK(std::fabs(got.plan_fixed_ns - want.plan_fixed_ns) <= 2.0);
    CHECK(got.plan_per_request_ns == doctest::Approx(want.plan_per_request_ns).epsilon(1e-3));
    CHECK(std::fabs(got.copy_fixed_ns - want.copy_fixed_ns) <= 2.0);
    CHECK(got.row_bytes_per_s == doctest::Approx(want.row_bytes_per_s).epsilon(1e-3));
    CHECK(got.per_request_row_bytes_per_s == doctest::Approx(want.per_request_row_bytes_per_s).epsilon(1e-3));
  }
  int held = 0;
  for (const auto& p : c.points) held += p.set == "held-out";
  CHECK(held == 32 - 12);  // 8 x 4 swap-in points, 4 x 3 fitted
  CHECK(max_relative_error(c, "held-out") < 5e-4);
  CHECK(max_relative_error(c, "fit") < 5e-4);
  // Expected: one regime fitted to the same points misses the held-out ones by far more (the step at Bc).
  FitOptions one = o;
  one.small_batch_max = 0;
  const Calibration single = fit_calibration(in, one);
  CHECK(single.fused.small_batch_max == 0);
  CHECK(max_relative_error(single, "held-out") > 0.05);
}

TEST_CASE("default fit batches: two per regime") {
  std::vector<CalibrationPoint> pts;
  for (int32_t B : {128, 1, 64, 4, 16, 100}) {
    CalibrationPoint p;
    p.op = "swap-in";
    p.batch = B;
    pts.push_back(p);
  }
  CHECK(default_fit_batches(pts, 8) == std::vector<int32_t>{1, 4, 16, 128});
  CHECK(default_fit_batches(pts, 16) == std::vector<int32_t>{1, 16, 64, 128});
  CHECK(default_fit_batches(pts, 0) == std::vector<int32_t>{1, 4, 16, 128});
}

TEST_CASE("a regime fitted at one batch size gets no per-request terms") {
  SwapInCopyCost truth = two_regime_cost();
  truth.small_batch_max = 16;  // fit batches 1, 4, 16 | 128: the large regime sees only 128
  truth.small.per_request_row_bytes_per_s = 0;
  truth.per_request_row_bytes_per_s = 0;
  truth.plan_per_request_ns = 0;
  FitOptions o;
  o.fit_batches = {1, 4, 16, 128};
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 16;
  const Calibration c = fit_calibration(synthetic_input(truth, {1, 4, 16, 64, 128}), o);
  CHECK(c.fused.per_request_row_bytes_per_s == 0);
  CHECK(c.fused.plan_per_request_ns == 0);
  // Expected (whole-ns points): the per-request term within 1 % of its 10 ns, the rest within 2 ns and 1e-3.
  CHECK(c.fused.small.plan_per_request_ns == doctest::Approx(truth.small.plan_per_request_ns).epsilon(1e-2));
  CHECK(std::fabs(c.fused.plan_fixed_ns - truth.plan_fixed_ns) <= 2.0);
  CHECK(c.fused.row_bytes_per_s == doctest::Approx(truth.row_bytes_per_s).epsilon(1e-3));
  CHECK(max_relative_error(c, "held-out") < 0.005);
  // Expected: no fitted batch above Bc is an error naming the regime, not a silent one-regime fit.
  o.fit_batches = {1, 4, 16};
  try {
    fit_calibration(synthetic_input(truth, {1, 4, 16, 64, 128}), o);
    FAIL("fitted a regime without points");
  } catch (const hisparse::Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("large-batch") != std::string::npos, e.what());
  }
}

TEST_CASE("the bench CSV's swap-in-kernel row sets Bc; --small-batch-max overrides it") {
  std::ifstream f(kSweep);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  if (text.back() != '\n') text += '\n';
  text += "\"NVIDIA H200\",swap-in-kernel,\"cluster kernel up to batch\",cluster,0.000,0,0.000,0.000,16,0.0000,0,\"\",\n";
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_bc.csv";
  write_file_atomically(path, text);
  const CalibrationInput in = read_bench_csv(path);
  CHECK(in.small_batch_max == 16);
  CHECK(in.points.size() == read_bench_csv(kSweep).points.size());  // the row is no timing point
  FitOptions o;
  CHECK(fit_calibration(in, o).fused.small_batch_max == 16);
  o.small_batch_max = 0;
  CHECK(fit_calibration(in, o).fused.small_batch_max == 0);
  o.small_batch_max = 8;
  const Calibration c = fit_calibration(in, o);
  CHECK(c.fused.small_batch_max == 8);
  CHECK(c.separate.small_batch_max == 8);
  std::remove(path.c_str());
}

TEST_CASE("committed one-regime calibrations load unchanged") {
  for (const char* name : {"h200-2026-11-21.yaml", "h200-2026-11-22.yaml"}) {
    CAPTURE(name);
    const Calibration c = load_calibration(std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/" + name);
    for (const SwapInCopyCost* s : {&c.fused, &c.separate}) {
      CHECK(s->small_batch_max == 0);
      // Every batch size takes the one set of terms, exactly as before the small-batch regime existed.
      for (int64_t B : {1, 4, 8, 16, 128}) {
        CHECK(&s->regime(B) == &s->large());
        const double plan = s->plan_fixed_ns + s->plan_per_request_ns * static_cast<double>(B);
        CHECK(s->plan_ns(B, 0) == static_cast<SimTime>(std::ceil(plan)));
      }
    }
  }
}

TEST_CASE("two-regime calibration YAML round-trips; small_batch_max is read strictly") {
  FitOptions o;
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  o.copy_rounds = false;  // the linear law two_regime_cost() generates
  const Calibration c = fit_calibration(synthetic_input(two_regime_cost(), {1, 2, 4, 8, 16, 32, 64, 128}), o);
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_two_regimes.yaml";
  const std::string good = calibration_yaml(c);
  write_file_atomically(path, good);
  const Calibration back = load_calibration(path);
  CHECK(back.fused.small_batch_max == 8);
  CHECK(!back.separate.calibrated);
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    const SwapInRegimeCost& a = r ? c.fused.small : c.fused.large();
    const SwapInRegimeCost& b = r ? back.fused.small : back.fused.large();
    CHECK(b.plan_fixed_ns == doctest::Approx(a.plan_fixed_ns).epsilon(1e-4));
    CHECK(b.plan_per_request_ns == doctest::Approx(a.plan_per_request_ns).epsilon(1e-3));
    CHECK(b.copy_fixed_ns == doctest::Approx(a.copy_fixed_ns).epsilon(1e-3));
    CHECK(b.row_bytes_per_s == doctest::Approx(a.row_bytes_per_s).epsilon(1e-4));
    CHECK(b.per_request_row_bytes_per_s == doctest::Approx(a.per_request_row_bytes_per_s).epsilon(1e-4));
  }
  for (int64_t B : {1, 8, 9, 128})
    CHECK(std::llabs(back.fused.plan_ns(B, 0) - c.fused.plan_ns(B, 0)) <= 1);
  auto rejects = [&](const std::string& from, const std::string& to, const std::string& needle) {
    check_rejected_edit(good, path, from, to, needle);
  };
  rejects("small_batch_max: 8", "small_batch_max: -1", "small_batch_max");
  rejects("small_batch_max: 8", "small_batch_max: 2.5", "small_batch_max");
  rejects("small_batch_max: 8", "small_batch_max: eight", "small_batch_max");
  rejects("small_batch_max: 8", "small_batch_max: 0", "small_batch");               // terms without a threshold
  rejects("  small_batch_max: 8", "  small_batch_max: 8\n  small_batch_min: 2", "small_batch_min");  // unknown key
  rejects("    small_batch:", "    small_batches:", "small_batch");                  // threshold without terms
  rejects("      copy_fixed_ns:", "      copy_fixed_us:", "copy_fixed_us");           // strict inside small_batch
  std::remove(path.c_str());
}

TEST_CASE("the simulator charges the small-batch kernel's terms up to Bc and the large-batch ones above") {
  Scenario sc = load_scenario("dsv32-8xh200-1tb");
  CostParams params;
  FitOptions o;
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  o.copy_rounds = false;  // the linear law two_regime_cost() generates
  const Calibration c = fit_calibration(synthetic_input(two_regime_cost(), {1, 2, 4, 8, 16, 32, 64, 128}), o);
  apply_calibration(c, &sc, &params);
  REQUIRE(params.swap_in_cost.small_batch_max == 8);
  const int64_t H = sc.deployment.hisparse.device_buffer_size, L = sc.model.layers;
  const DecodeCostModel cm(sc, params, true);
  for (int64_t B : {1, 8, 9, 64}) {
    CAPTURE(B);
    const SwapInRegimeCost& r = B <= 8 ? c.fused.small : c.fused.large();
    GpuBatch b;
    b.requests = B;
    b.sum_n = b.sum_attended = B * 20000.0;
    b.slow_path = B;
    CHECK(cm.gpu_phases(b).swap_in == L * r.plan_ns(B, H) + cm.hisparse_output_clear_ns(B));
    CHECK(params.swap_in_cost.copy_rate(B) == r.copy_rate(B));
    CHECK(params.swap_in_cost.copy_latency_ns(B) == r.copy_latency_ns());
  }
  // A lone request runs the small-batch kernel: its step's swap-in + h2d is L x the small regime's one-call time.
  ServingOptions opt;
  opt.cost = params;
  Workload w;
  w.name = "one";
  w.requests.push_back(RequestSpec{0, 1000, 10000, 3});
  const ServingResult res = run_serving(sc, w, opt);
  REQUIRE(res.steps.size() == 2);
  const int64_t rows = sc.deployment.hisparse.top_k - 1;
  const SimTime per_layer = predict_swap_in_copy_ns(c.fused, sc.hardware.pcie.h2d_bulk_bytes_per_s, 1152, 1, H, rows);
  const SimTime small_only = c.fused.small.plan_ns(1, H) +
                             c.fused.small.copy_ns(1, static_cast<double>(rows) * 1152, sc.hardware.pcie.h2d_bulk_bytes_per_s);
  CHECK(per_layer == small_only);
  const SimTime charged = res.steps[0].slowest.swap_in + res.steps[0].slowest.h2d - cm.hisparse_output_clear_ns(1);
  CHECK(std::llabs(charged - L * per_layer) <= L);
}

