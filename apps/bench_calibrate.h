// @brief `hisparse bench --calibrate`: measure (or read a bench CSV), fit the simulator's calibration, check it on
// held-out sizes, write the calibration YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/gpu/copy_bench.h"

namespace hisparse::apps {

struct CalibrateOptions {
  std::string out;        // calibration YAML (default calibration-<device>-<date>.yaml)
  std::string from_csv;   // fit an existing `hisparse bench --csv` file instead of measuring
  std::string csv;        // live mode: where the measured rows go (default <out without .yaml>.csv)
  std::string date;       // YYYY-MM-DD (default: today, UTC)
  // Separate by default: on the cluster kernel (batches <= 8) the fused copy runs in latency rounds over 8 SMs
  // and is not linear in rows (its model missed held-out points by 21% on the H200); separate is, and is as fast
  // or faster there.
  std::string copy_mode = "separate";
  std::string fit_batches = "auto";  // auto: sim::default_fit_batches (two per kernel regime)
  int small_batch_max = -1;   // Bc of the small-batch swap-in kernel: -1 = the CSV's swap-in-kernel row / the device's
  std::string fit_miss_rates = "0,0.2,0.5";
  double max_error_pct = 10;  // held-out error above this: exit status 1
  bench::BenchOptions bench;
};

int run_calibrate(const CalibrateOptions& options);

/// The `hisparse bench --csv` format (defined in bench.cpp; also what `--from-csv` reads).
void write_bench_csv(const std::string& path, const std::string& device, const std::vector<bench::BenchRow>& rows);

}  // namespace hisparse::apps
