// @brief Which measurements the cost model uses: the calibrations of the scenario's hardware by default
// (hardware YAML `calibration:` and `step_calibration:`), a file named on the command line, or none (roofline);
// one line saying which, for every report.
#pragma once

#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"

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

/// Also chooses the swap-in kernel's terms: the deployment's swap_in_kernel_used() (sglang by default) takes them
/// from the hardware's sglang_swap_in_calibration when it names one (else this project's kernel prices it, and the
/// line says so); project from the calibration. CostParams::swap_in_kernel records which.
std::string apply_calibrations(const std::string& calibration, const std::string& step_calibration, Scenario* scenario,
                               CostParams* params);

/// `flag`: auto | none | a CSV (sim/cost/terms/attention_table.h). Sets params->attention, adds its term to the
/// provenance (CostParams::sources) and returns the line reports print.
std::string apply_attention_table(const std::string& flag, const Scenario& scenario, CostParams* params);

}  // namespace hisparse::sim
