// @brief The per-op step calibration's fit (sim/cost/terms/op_time_model.h holds the models it fits, which the step model
// reads): `hisparse bench step` rows measured on one GPU, each op's time model fitted with its fit and held-out
// errors (per op, per op family, and for the whole layer), the YAML file and its strict reader, the tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/decode_layer_ops.h"
#include "core/model_spec.h"
#include "sim/cost/terms/op_time_model.h"

namespace hisparse::sim {

/// One row of a `bench step` CSV.
struct StepBenchMeasurement {
  std::string device, model, op, family, dtype, impl;
  int batch = 0;
  int64_t context = 0;
  double median_us = 0, flops = 0, bytes = 0;
};
/// Reads a `bench step --csv` file (errors name the file, line and column).
std::vector<StepBenchMeasurement> read_step_csv(const std::string& path);

/// Fits every (op, dtype) of `rows` on the batches in `fit_batches` (each op's other points are held out), then
/// checks family sums and the whole layer (core/decode_layer_ops.h's moe_layer_ops) against the measured rows.
StepCalibration fit_step_calibration(const std::vector<StepBenchMeasurement>& rows, const ModelSpec& model,
                                     const std::vector<int>& fit_batches, int ep);

std::string step_calibration_yaml(const StepCalibration& c);
/// Reads a per-op calibration: a file of its own (`bench step --fit`) or the `step:` section of a device
/// calibration (`bench --calibrate`). Strict: unknown keys and bad values are errors naming the file and key.
StepCalibration load_step_calibration(const std::string& path);
/// True when the file at `path` holds per-op models (a `step:` section of a device calibration).
bool has_step_section(const std::string& path);
/// Tables of the per-op fit and the family and layer checks.
std::string step_calibration_table(const StepCalibration& c);

}  // namespace hisparse::sim
