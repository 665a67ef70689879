// @brief Test support shared by the calibration tests: a two-regime swap-in cost, points generated exactly from a
// cost, and the check that an edited calibration YAML is refused.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "core/io/output_file.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/calibration_fit.h"

namespace hisparse::sim::calibration_test {

/// Two kernels: a cluster kernel for batches 1..8 (cheaper plan, fast per request) and a one-block kernel above.
inline SwapInCopyCost two_regime_cost() {
  SwapInCopyCost c;
  c.calibrated = true;
  c.small_batch_max = 8;
  c.small.plan_fixed_ns = 9500;
  c.small.plan_per_request_ns = 10;
  c.small.copy_fixed_ns = 2000;
  c.small.row_bytes_per_s = 45e9;
  c.small.per_request_row_bytes_per_s = 12e9;  // binds at batch 1 and 2 only
  c.plan_fixed_ns = 15000;
  c.plan_per_request_ns = 25;
  c.copy_fixed_ns = 1500;
  c.row_bytes_per_s = 50e9;
  c.per_request_row_bytes_per_s = 2.5e9;  // binds at batch 16 only
  return c;
}

/// Points measured exactly as the model says (no noise), over batch x miss rate (x H), plus gather and backup rows.
inline CalibrationInput synthetic_input(const SwapInCopyCost& c, std::initializer_list<int32_t> batches = {1, 2, 4, 8, 32, 128},
                                 std::initializer_list<int32_t> Hs = {4096}) {
  CalibrationInput in;
  in.device = "synthetic";
  in.h2d_bulk_bytes_per_s = 50e9;
  in.d2h_bulk_bytes_per_s = 48e9;
  for (int32_t H : Hs)
    for (int32_t B : batches)
      for (double miss : {0.0, 0.1, 0.3, 0.6}) {
        CalibrationPoint p;
        p.op = "swap-in";
        p.mode = "fused";
        p.batch = B;
        p.H = H;
        p.K = 2048;
        p.miss_rate = miss;
        p.rows = static_cast<int64_t>(std::lround(miss * 2048)) * B;
        p.measured_us =
            static_cast<double>(predict_swap_in_copy_ns(c, in.h2d_bulk_bytes_per_s, 1152, B, H, p.rows, p.K)) * 1e-3;
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

/// `good` with `from` replaced by `to`, written to `path`, must fail to load with an error mentioning `needle`.
inline void check_rejected_edit(const std::string& good, const std::string& path, const std::string& from,
                         const std::string& to, const std::string& needle) {
  std::string text = good;
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  write_file_atomically(path, text);
  try {
    load_calibration(path);
    FAIL("accepted: " << to);
  } catch (const hisparse::Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, std::string(e.what()));
  }
}

}  // namespace hisparse::sim::calibration_test
