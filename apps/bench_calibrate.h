// @brief `hisparse bench --calibrate`: measure (or read a bench CSV), fit the simulator's calibration, check it on
// held-out sizes, write the calibration YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/bench.h"

namespace hisparse::apps {

struct CalibrateOptions {
  std::string out;        // calibration YAML (default calibration-<device>-<date>.yaml)
  std::string from_csv;   // fit an existing `hisparse bench --csv` file instead of measuring
  std::string csv;        // live mode: where the measured rows go (default <out without .yaml>.csv)
  std::string date;       // YYYY-MM-DD (default: today, UTC)
  std::string copy_mode = "fused";
  std::string fit_batches = "1,16,128";
  std::string fit_miss_rates = "0,0.2,0.5";
  double max_error_pct = 10;  // held-out error above this: exit status 1
  cuda::BenchOptions bench;
};

int run_calibrate(const CalibrateOptions& options);

/// The `hisparse bench --csv` format (defined in bench.cpp; also what `--from-csv` reads).
void write_bench_csv(const std::string& path, const std::string& device, const std::vector<cuda::BenchRow>& rows);

}  // namespace hisparse::apps
