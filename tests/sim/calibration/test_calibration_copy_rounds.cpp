// @brief Calibration of the copy's latency rounds: the rounds form recovers a concave copy law, its latency part plus
// its flow is the whole copy, files without rounds load unchanged, and the simulator charges the rounds.
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

/// The cluster kernel's fused copy as sim/cost/terms/swap_in_cost.h models it (latency rounds over 8 LRU slices, a smooth max
/// with the link), a plan that walks H slots, and the one-block kernel above Bc = 8.
SwapInCopyCost concave_cost() {
  SwapInCopyCost c = two_regime_cost();
  c.small.per_request_row_bytes_per_s = 0;
  c.small.copy_fixed_ns = 0;
  c.small.copy_round_ns = 1800;
  c.small.copy_rows_per_round = 32;
  c.small.copy_slices = 8;
  c.small.plan_per_slot_ns = 0.5;
  c.plan_per_slot_ns = 0.25;
  return c;
}

}  // namespace

TEST_CASE("the rounds form recovers a synthetic concave copy law and plan_per_slot from an H sweep") {
  const SwapInCopyCost truth = concave_cost();
  // Concave in rows at batch 1: the busiest block's share saturates at E / 8 evictable slots.
  SwapInCall call{1, 0, 1152, 4096, 2048};
  double prev_per_row = 1e30;
  for (double rows : {256.0, 614.0, 1229.0}) {
    call.rows = rows;
    const double per_row = static_cast<double>(truth.copy_ns(call, 50e9)) / rows;
    CHECK(per_row < prev_per_row);
    prev_per_row = per_row;
  }
  const CalibrationInput in = synthetic_input(truth, {1, 2, 4, 8, 16, 64, 128}, {2048, 4096, 8192, 16384});
  FitOptions o;  // default batches 1, 8 | 16, 128; default H: the extremes and the most-measured (all equal: 2048)
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  const Calibration c = fit_calibration(in, o);
  CHECK(c.fit_H == std::vector<int32_t>{2048, 16384});
  int held_H = 0;
  for (const auto& p : c.points) held_H += p.set == "held-out" && (p.H == 4096 || p.H == 8192);
  CHECK(held_H == 2 * 7 * 4);  // every point at H 4096 and 8192 is held out
  const SwapInRegimeCost& s = c.fused.small;
  CHECK(s.copy_round_ns == doctest::Approx(1800).epsilon(0.02));
  CHECK(s.copy_slices == 8);
  CHECK(s.copy_rows_per_round == 32);
  CHECK(s.row_bytes_per_s == doctest::Approx(45e9).epsilon(0.02));
  CHECK(s.plan_per_slot_ns == doctest::Approx(0.5).epsilon(0.05));
  CHECK(c.fused.plan_per_slot_ns == doctest::Approx(0.25).epsilon(0.05));
  CHECK(c.fused.large().copy_round_ns == 0);
  MESSAGE("held-out max |error| " << 100 * max_relative_error(c, "held-out") << " %");
  CHECK(max_relative_error(c, "held-out") < 0.01);
  CHECK(max_relative_error(c, "fit") < 0.01);
  // The table reports the H of every point and the held-out error of each mode.
  const std::string table = calibration_table(c);
  CHECK(table.find("held-out") != std::string::npos);
  CHECK(table.find("16384") != std::string::npos);
  CHECK(table.find("smooth max with rounds of") != std::string::npos);
  // Expected: the linear form fitted to the same points misses the held-out ones by far more.
  FitOptions linear = o;
  linear.copy_rounds = false;
  CHECK(max_relative_error(fit_calibration(in, linear), "held-out") > 0.10);
  // The YAML carries the rounds and the H list; reading it back predicts the same times.
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_rounds.yaml";
  write_file_atomically(path, calibration_yaml(c));
  const Calibration back = load_calibration(path);
  CHECK(back.fit_H == c.fit_H);
  CHECK(back.fused.small.copy_round_ns == doctest::Approx(s.copy_round_ns).epsilon(1e-3));
  CHECK(back.fused.small.copy_slices == 8);
  CHECK(back.fused.small.copy_rows_per_round == 32);
  for (const auto& p : c.points) {
    if (p.op != "swap-in") continue;
    const SimTime a = predict_swap_in_copy_ns(c.fused, c.h2d_bulk_bytes_per_s, 1152, p.batch, p.H, p.rows, p.K);
    const SimTime b = predict_swap_in_copy_ns(back.fused, back.h2d_bulk_bytes_per_s, 1152, p.batch, p.H, p.rows, p.K);
    CHECK(std::llabs(a - b) <= std::max<SimTime>(2, a / 10000));
  }
  std::remove(path.c_str());
}

TEST_CASE("the copy's latency part plus its flow is the whole copy; no rounds is the linear form") {
  const SwapInCopyCost c = concave_cost();
  for (int64_t B : {1, 4, 8, 16}) {
    for (double rows : {0.0, 50.0 * B, 400.0 * B, 2000.0 * B}) {
      CAPTURE(B);
      CAPTURE(rows);
      const SwapInCall call{B, rows, 1152, 4096, 2048};
      const SwapInRegimeCost& r = c.regime(B);
      const double rate = std::min(r.copy_rate(B), 48e9);
      CHECK(c.copy_ns(call, 48e9) == (rows > 0 ? c.copy_latency_ns(call, 48e9) + transfer_ns(call.bytes(), rate) : 0));
      CHECK(c.copy_latency_ns(call, 48e9) >= (rows > 0 ? r.copy_latency_ns() : 0));
      if (r.copy_round_ns == 0) CHECK(c.copy_ns(call, 48e9) == c.copy_ns(B, call.bytes(), 48e9));
    }
  }
  // Without copy_round_ns the rounds change nothing, whatever H and K say.
  SwapInRegimeCost lin = c.large();
  CHECK(lin.copy_round_ns == 0);
  CHECK(lin.copy_ns(SwapInCall{32, 6000, 1152, 2048, 2048}, 0) == lin.copy_ns(32, 6000.0 * 1152, 0));
  // The busiest block: min(M, ceil((H - K + M) / 8)) rows, 32 a round.
  const SwapInRegimeCost& s = c.small;
  CHECK(s.copy_rounds(SwapInCall{1, 102, 1152, 4096, 2048}) == 4);    // 102 rows: all in the coldest slice
  CHECK(s.copy_rounds(SwapInCall{1, 410, 1152, 4096, 2048}) == 10);   // E = 2458: 308 rows in the coldest slice
  CHECK(s.copy_rounds(SwapInCall{4, 4096, 1152, 4096, 2048}) == 12);  // 1024 per request, E = 3072: 384
  CHECK(s.copy_rounds(SwapInCall{1, 410, 1152, 16384, 2048}) == 13);  // a large H: every miss in the first slice
  CHECK(s.copy_rounds(SwapInCall{1, 1024, 1152, 2048, 2048}) == 4);   // H = K: E = M, spread over all 8 slices
}

TEST_CASE("files without the rounds load unchanged; the round keys are read strictly") {
  for (const char* name : {"h200-2026-11-21.yaml", "h200-2026-11-22.yaml"}) {
    CAPTURE(name);
    const std::string path = std::string(HISPARSE_SOURCE_DIR) + "/scenarios/calibration/" + name;
    const Calibration c = load_calibration(path);
    CHECK(c.fit_H.empty());
    for (const SwapInCopyCost* s : {&c.fused, &c.separate}) {
      CHECK(s->copy_round_ns == 0);
      CHECK(s->copy_slices == 1);
      CHECK(s->copy_rows_per_round == 0);
      // The copy is the linear form it always was, at every shape.
      for (int64_t B : {1, 16, 128})
        for (double rows : {10.0, 1000.0, 100000.0}) {
          const SwapInCall call{B, rows, 1152, 4096, 2048};
          const double bytes = rows * 1152;
          CHECK(s->copy_ns(call, c.h2d_bulk_bytes_per_s) == s->copy_latency_ns(B) + transfer_ns(bytes, std::min(s->copy_rate(B), c.h2d_bulk_bytes_per_s)));
        }
    }
    // Written back, a linear file has no round keys and no H list (its text means what it meant).
    const std::string text = calibration_yaml(c);
    CHECK(text.find("    copy_round_ns:") == std::string::npos);
    CHECK(text.find("  H: [") == std::string::npos);
  }
  // Strictness.
  FitOptions o;
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  const Calibration c = fit_calibration(synthetic_input(concave_cost(), {1, 4, 8, 16, 128}, {2048, 4096, 16384}), o);
  const std::string good = calibration_yaml(c);
  REQUIRE(good.find("      copy_round_ns:") != std::string::npos);
  REQUIRE(good.find("  H: [") != std::string::npos);
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_rounds_strict.yaml";
  write_file_atomically(path, good);
  CHECK(load_calibration(path).fused.small.copy_round_ns > 0);
  auto rejects = [&](const std::string& from, const std::string& to, const std::string& needle) {
    check_rejected_edit(good, path, from, to, needle);
  };
  const std::string round = fmt::format("copy_round_ns: {:.1f}", c.fused.small.copy_round_ns);
  rejects(round, "copy_round_ns: -5", "copy_round_ns");
  rejects(round, "copy_round_ns: fast", "copy_round_ns");
  rejects(round, "copy_round_ns: 0", "copy_round_ns is 0");            // a shape without a latency
  rejects("copy_rows_per_round: 32", "copy_rows_per_round: 2.5", "copy_rows_per_round");
  rejects("copy_rows_per_round: 32", "copy_rows_per_round: -1", "copy_rows_per_round");
  rejects("copy_slices: 8", "copy_slices: 0", "copy_slices");
  rejects("copy_slices: 8", "copy_slices: 8\n      copy_slice: 8", "copy_slice");  // unknown key
  rejects("  H: [", "  Hs: [", "Hs");
  std::remove(path.c_str());
}

TEST_CASE("the bench CSV: H from the config text, the cluster's blocks per request from its kernel row") {
  std::ifstream f(std::string(HISPARSE_SOURCE_DIR) + "/bench/results/gpu_check_h200_48a365c/bench.csv");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  if (text.back() != '\n') text += '\n';
  text += "\"NVIDIA H200\",swap-in-kernel,\"cluster blocks per request\",cluster-blocks,0.000,0,0.000,0.000,4,0.0000,0,\"\",\n";
  text += "\"NVIDIA H200\",swap-in-sweep,\"B=1 H=16384 K=2048 miss=20%\",fused,30.500,472320,15.49,53.1,1,0.2000,410,\"\",\n";
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/test_calibration_h.csv";
  write_file_atomically(path, text);
  const CalibrationInput in = read_bench_csv(path);
  CHECK(in.cluster_blocks == 4);
  CHECK(in.points.back().H == 16384);
  CHECK(in.points.back().K == 2048);
  CHECK(in.points.back().rows == 410);
  // Two H: both fitted; the blocks per request shape the small regime's rounds.
  const Calibration c = fit_calibration(in, FitOptions{});
  CHECK(c.fit_H == std::vector<int32_t>{4096, 16384});
  CHECK(c.fused.small.copy_slices == 4);
  std::remove(path.c_str());
}

TEST_CASE("the simulator charges the copy's latency rounds: serving and the one-call prediction agree") {
  Scenario sc = load_scenario("dsv32-8xh200-1tb");
  CostParams params;
  FitOptions o;
  o.fit_miss_rates = {0.0, 0.3, 0.6};
  o.small_batch_max = 8;
  const Calibration c = fit_calibration(synthetic_input(concave_cost(), {1, 2, 4, 8, 16, 32, 64, 128}), o);
  apply_calibration(c, &sc, &params);
  REQUIRE(params.swap_in_cost.small.copy_round_ns > 0);
  const int64_t H = sc.deployment.hisparse.device_buffer_size, L = sc.model.layers, K = sc.deployment.hisparse.top_k;
  ServingOptions opt;
  opt.cost = params;
  Workload w;
  w.name = "one";
  w.requests.push_back(RequestSpec{0, 1000, 10000, 3});
  const ServingResult res = run_serving(sc, w, opt);
  REQUIRE(res.steps.size() == 2);
  const int64_t rows = K - 1;  // a lone request with an empty buffer misses every selection but the newest
  const SimTime per_layer = predict_swap_in_copy_ns(c.fused, sc.hardware.pcie.h2d_bulk_bytes_per_s, 1152, 1, H, rows, K);
  const SwapInCall call{1, static_cast<double>(rows), 1152, H, K};
  CHECK(c.fused.small.copy_latency_ns(call, sc.hardware.pcie.h2d_bulk_bytes_per_s) > c.fused.small.copy_latency_ns());
  // Beside the call, SGLang's clear of the output slots (DecodeCostModel::hisparse_output_clear_ns).
  const SimTime clear = DecodeCostModel(sc, params, true).hisparse_output_clear_ns(1);
  const SimTime charged = res.steps[0].slowest.swap_in + res.steps[0].slowest.h2d - clear;
  CHECK(std::llabs(charged - L * per_layer) <= 2 * L);
}
