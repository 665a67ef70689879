// @brief `hisparse bench --calibrate`: measure (or read stored CSVs), fit every measured term of the simulator's
// calibration (PCIe, swap-in plan and copy, gather, backup; the per-op models of a decode layer), check each on
// held-out sizes, write one calibration YAML per device with its provenance.
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
  // Fused by default: it is the copy the CUDA backend runs (Backend::copy_mode_, core/backend.h). On the cluster
  // kernel (batches <= Bc) it runs in latency rounds bounded by the busiest block's LRU slice, which the fit models
  // (sim/cost/terms/swap_in_cost.h): held-out max 7.6% on the H200 sweep (the linear form missed by 20.8%).
  std::string copy_mode = "fused";
  std::string fit_batches = "auto";  // auto: sim::default_fit_batches (two per kernel regime)
  int small_batch_max = -1;   // Bc of the small-batch swap-in kernel: -1 = the CSV's swap-in-kernel row / the device's
  std::string fit_miss_rates = "0,0.2,0.5";
  double max_error_pct = 10;  // held-out error above this: exit status 1
  bench::BenchOptions bench;
  // The per-op models of a decode layer (sim/calibration/step_calibration.h), written into the same file under `step:`.
  bool step = true;                  // live: run `bench step`'s sweep too; --no-step leaves the section out
  std::string step_csv;              // --from-csv: the stored `bench step --csv` rows to fit ("" = no step section)
  std::string model;                 // "" = live: deepseek-v3.2; from stored rows: the rows' model
  std::string step_batches = "1,2,3,4,6,8,12,16,24,32,48,64,96,128,160,192,224,256";
  std::string step_contexts = "2K,4K,8K,16K,32K,64K";
  std::string step_fit_batches = "1,3,6,12,24,48,96,160,256";
  int ep = 8;
};

int run_calibrate(const CalibrateOptions& options);

/// The `hisparse bench --csv` format (defined in bench.cpp; also what `--from-csv` reads).
void write_bench_csv(const std::string& path, const std::string& device, const std::vector<bench::BenchRow>& rows);

}  // namespace hisparse::apps
