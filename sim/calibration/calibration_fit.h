// @brief Fitting a Calibration to measured points (a bench CSV or a live `hisparse bench --calibrate` run), with a
// held-out check: fit on some (batch, miss-rate) pairs, report the error on the others.
#pragma once

#include <string>
#include <vector>

#include "sim/calibration/calibration.h"

namespace hisparse::sim {

struct CalibrationInput {
  std::string device;
  std::vector<CalibrationPoint> points;    // swap-in (fused/separate), gather, backup
  double h2d_bulk_bytes_per_s = 0;         // largest bulk ceiling seen host→device
  double d2h_bulk_bytes_per_s = 0;         // device→host
  double timing_overhead_ns = 0;           // empty kernel, per call (0 = unknown)
  int32_t small_batch_max = 0;             // Bc of the small-batch swap-in kernel (0 = one kernel for every batch)
  int32_t cluster_blocks = 0;              // blocks per request of that kernel (0 = not recorded: the default, 8)
};

/// Reads a `hisparse bench --csv` file (columns device, op, config, mode, median_us, ..., batch, miss_rate, rows).
/// Rows of op swap-in-sweep become swap-in points (H and K from the config text); gather/backup zero-copy rows
/// become gather/backup points; bulk ceilings and the empty-kernel row fill the rest. The row of op swap-in-kernel,
/// mode cluster carries Bc (the largest batch of the cluster kernel) in its batch column; without it, one regime.
/// The row of op swap-in-kernel, mode cluster-blocks carries its blocks per request (absent: 8, the default).
CalibrationInput read_bench_csv(const std::string& path);

/// The batch sizes fitted when none are given: with Bc > 0, each regime's smallest and largest measured batch size
/// (the usual sweep 1, 4, 16, 64, 128 (+100): Bc = 8 -> 1, 4 | 16, 128; Bc = 16 -> 1, 16 | 64, 128); with one regime
/// 1, 4, 16, 128. The rest (and every miss rate outside the fit list) is held out.
std::vector<int32_t> default_fit_batches(const std::vector<CalibrationPoint>& points, int32_t small_batch_max);

/// The H values fitted when none are given: every H when the points have one or two; else the smallest, the largest
/// and the H with the most points (the batch x miss sweep's), the ones between held out (the usual sweep: 2048, 4096,
/// 16384 fitted, 8192 held out).
std::vector<int32_t> default_fit_H(const std::vector<CalibrationPoint>& points);

struct FitOptions {
  std::vector<int32_t> fit_batches;  // empty: default_fit_batches()
  std::vector<double> fit_miss_rates = {0.0, 0.2, 0.5};
  int64_t row_bytes = 1152;
  std::string copy_mode = "fused";
  std::string date;        // YYYY-MM-DD
  std::string made_from;
  int32_t small_batch_max = -1;  // Bc; -1 = the input's (CalibrationInput::small_batch_max), 0 = one regime
  std::vector<int32_t> fit_H;    // H values fitted (others held out); empty: default_fit_H()
  bool copy_rounds = true;       // fit latency rounds to the cluster kernel's fused copy (false: the linear copy everywhere)
  int32_t cluster_blocks = -1;   // slices per request of those rounds; -1 = the input's (8 when not recorded)
  int64_t copy_rows_per_round = 32;  // rows a block keeps in flight: its 32 warps, a row each (cuda/swap_in_cluster.cu)
};

/// Fits every part; swap-in points whose batch, miss rate and H are all in the fit lists are "fit", the rest
/// "held-out". With Bc > 0 each swap-in mode has two regimes, batches 1..Bc and above, each fitted on its own points.
/// Throws when a swap-in regime has fewer than 3 fit points (or none that copy), or the bulk rates are missing.
Calibration fit_calibration(const CalibrationInput& input, const FitOptions& options);

/// Largest |predicted - measured| / measured over the points of `set` ("fit" or "held-out") and `mode`
/// ("" = every swap-in mode); 0 when there are none.
double max_relative_error(const Calibration& c, const std::string& set, const std::string& mode = "");

/// The accuracy table (one line per swap-in point, then gather/backup), for stdout and reports.
std::string calibration_table(const Calibration& c);

}  // namespace hisparse::sim
