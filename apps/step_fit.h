// @brief Shared by `bench step` and `bench --calibrate`: the model file of a name, the step CSV text, and the fit of
// per-op models to measured rows with its worst held-out check.
#pragma once

#include <string>
#include <vector>

#include "bench/gpu/step_bench.h"
#include "sim/calibration/step_calibration.h"

namespace hisparse::apps {

/// A model name (scenarios/models/<name>.yaml in the scenario directories) or a YAML path.
std::string model_path(const std::string& name);

/// The `bench step --csv` text (read back by sim::read_step_csv).
std::string step_csv_text(const std::string& device, const std::string& model,
                          const std::vector<bench::StepBenchRow>& rows);

/// Fits `rows` (of `model_override`, else the rows' model) on `fit_batches` ("1,3,6"), every other batch held out.
sim::StepCalibration fit_step_rows(const std::vector<sim::StepBenchMeasurement>& rows, const std::string& model_override,
                                   const std::string& fit_batches, int ep);

/// The largest held-out |error| of a family or the layer, and which one it is.
double worst_held_out_check(const sim::StepCalibration& c, std::string* what);

/// "YYYY-MM-DD" of today, UTC.
std::string today_utc();

/// `path` relative to the working directory when it lies under it (provenance written into shared files).
std::string repo_relative(const std::string& path);

}  // namespace hisparse::apps
