// @brief Which measurements the cost model uses: the calibrations of the scenario's hardware by default
// (hardware YAML `calibration:` and `step_calibration:`), a file named on the command line, or none (roofline);
// one line saying which, for every report.
#pragma once

#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/cost_params.h"

namespace hisparse::sim {

/// `calibration` and `step_calibration`: "auto" (the hardware file's, if it names one), "none", or a YAML path.
/// Applies them to `scenario` (PCIe figures) and `params` (swap-in costs, per-op models) and returns the line
/// reports print, e.g. "swap-in/PCIe calibrated (…); per-op calibrated (…); other terms roofline".
/// `cost_params`: "auto" (the hardware file's `cost_model:`, else the bundled scenarios/cost_model/sglang-hopper.yaml)
/// or a YAML path. Loads every term with its source into `params` (overlap and link model included) and returns the
/// line reports print, e.g. "cost terms: scenarios/cost_model/sglang-hopper.yaml (12 terms: 3 measured, ...)".
std::string load_cost_terms(const std::string& cost_params, const Scenario& scenario, CostParams* params);

/// The bundled default cost-model file (first scenario directory holding cost_model/sglang-hopper.yaml).
std::string default_cost_model_file();

std::string apply_calibrations(const std::string& calibration, const std::string& step_calibration, Scenario* scenario,
                               CostParams* params);

}  // namespace hisparse::sim
