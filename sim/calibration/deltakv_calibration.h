// @brief The DeltaKV reconstruction timed on a GPU (`hisparse bench deltakv`, its CSV turned into a YAML by
// scripts/deltakv_calibration.py): the time per reconstructed row at the measured shape, and the effective HBM
// bytes per row it stands for on the measuring GPU, which `plan --strategies` prices at the deployment's HBM rate.
#pragma once

#include <cstdint>
#include <string>

namespace hisparse::sim {

struct DeltaKvCalibration {
  std::string path;            // the file read
  std::string device;          // the GPU measured ("NVIDIA H100 80GB HBM3")
  std::string date;            // YYYY-MM-DD of the measurement
  std::string source;          // the bench CSV the figures come from
  int64_t dim = 0;             // elements per row of the timed shape
  int64_t refs = 0;            // reference rows per compressed row
  int64_t rows_per_call = 0;   // rows reconstructed per kernel call
  double ns_per_row = 0;       // measured: median call time / rows_per_call
  double hbm_bytes_per_s = 0;  // the measuring GPU's HBM rate (its hardware file), converting time into bytes
  /// ns_per_row × hbm_bytes_per_s: the HBM traffic that would take as long as one row's reconstruction.
  double effective_bytes_per_row() const { return ns_per_row * 1e-9 * hbm_bytes_per_s; }
};

/// Reads the `deltakv_reconstruction:` block; an unknown key, a missing one or a value out of range is an error
/// naming the file and the key.
DeltaKvCalibration load_deltakv_calibration(const std::string& path);

}  // namespace hisparse::sim
