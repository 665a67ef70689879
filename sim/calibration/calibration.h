// @brief Calibration: what `hisparse bench --calibrate` measured on one device (bulk PCIe rates, swap-in plan and
// miss-copy costs, gather and backup rates, the raw points), its YAML file, and how it replaces the defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/cost/terms/swap_in_cost.h"

namespace hisparse::sim {

/// One measured call: a swap-in of `batch` requests copying `rows` rows, or a gather/backup of `rows` rows.
struct CalibrationPoint {
  std::string op;          // swap-in | gather | backup
  std::string mode;        // swap-in: fused | separate; gather/backup: zero-copy
  int32_t batch = 0;       // requests (swap-in, backup)
  int32_t H = 0;           // device buffer slots (swap-in)
  int32_t K = 0;           // top-k (swap-in)
  double miss_rate = 0;    // misses / K per request (swap-in)
  int64_t rows = 0;        // rows copied by the call
  double measured_us = 0;  // median per call
  double predicted_us = 0; // by the fitted model (filled by the fit)
  std::string set;         // "fit" | "held-out" (swap-in) | "" (not part of the accuracy check)
};

/// A fixed cost plus a per-row rate (gather, backup).
struct RowRateCost {
  double fixed_ns = 0;
  double row_bytes_per_s = 0;
  bool present() const { return row_bytes_per_s > 0; }
};

struct Calibration {
  std::string source;               // file it was read from (errors), or the CSV/device it was made from
  std::string device;               // "NVIDIA H200"
  std::string date;                 // YYYY-MM-DD of the fit
  std::string made_from;            // "bench on <device>" or the CSV path
  std::string driver;               // kernel module and CUDA versions of a live run ("" in older files)
  int sm_count = 0;                 // SMs the device reported (0 = not recorded)
  int64_t row_bytes = 1152;
  std::string copy_mode = "fused";  // which swap_in entry the simulator charges
  double h2d_bulk_bytes_per_s = 0;  // pinned bulk cudaMemcpy, largest size measured
  double d2h_bulk_bytes_per_s = 0;
  SwapInCopyCost fused, separate;  // each: the large-batch terms, and with small_batch_max > 0 those of batches 1..Bc
  RowRateCost gather, backup;
  double timing_overhead_ns = 0;    // an empty kernel timed the same way (0 = not measured); part of every fixed cost
  std::vector<int32_t> fit_batches;
  std::vector<double> fit_miss_rates;
  std::vector<int32_t> fit_H;       // H values fitted (empty: every H, as files before the H sweep meant)
  std::vector<CalibrationPoint> points;

  const SwapInCopyCost& swap_in() const { return copy_mode == "separate" ? separate : fused; }
};

/// Strict reading (unknown keys and out-of-range values are errors naming the file and key). swap_in.small_batch_max
/// (optional, 0 when absent: one regime) and swap_in.<mode>.small_batch (required exactly when it is > 0) carry the
/// small-batch kernel's terms; copy_round_ns / copy_rows_per_round / copy_slices (optional, default 0 / 0 / 1: no
/// latency rounds) the copy's rounds. Files without them mean what they always meant.
Calibration load_calibration(const std::string& path);
/// YAML text of `c` (read back by load_calibration to the same values up to the printed precision).
std::string calibration_yaml(const Calibration& c);

/// Puts the measured figures in place of the hardware defaults: PCIe bulk rates, the small-row gather rate,
/// the per-transfer latency (from the backup fit), and the swap-in plan + copy cost of `c.copy_mode`.
void apply_calibration(const Calibration& c, Scenario* scenario, CostParams* params);

/// The simulator's time for one swap-in call (one layer) of `batch` requests on the slow path copying `rows`
/// rows: the plan (DecodeCostModel) plus the miss flow on an otherwise idle link (serving simulation). `K` (top-k,
/// 0 = not known) enters the copy's latency rounds only (SwapInRegimeCost::copy_rounds).
SimTime predict_swap_in_copy_ns(const SwapInCopyCost& cost, double h2d_link_bytes_per_s, int64_t row_bytes,
                                int64_t batch, int64_t H, int64_t rows, int64_t K = 0);

}  // namespace hisparse::sim
