// @brief The one loader every command's request goes through: a scenario (name or path) with its overrides, the
// cost terms, the calibrations and the overlap mode, and the miss model (a measured surface, a given fraction, or a
// replayed top-k trace), each with the label reports print to say where its figures come from.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/api/requests.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/miss/miss_curve.h"

namespace hisparse::sim {


/// The loaded set-up: the scenario with the overrides and calibrations applied, and its cost model.
struct ScenarioSetup {
  Scenario scenario;
  CostParams cost;
  std::string cost_line;          // "cost terms: … ; swap-in/PCIe calibrated (…)…": which terms and measurements
  double host_reserve_bytes = 0;  // per decode node (plan, advise)
  std::vector<std::string> warnings;  // about the inputs (an HBM well below the hardware's): every command prints them
};

/// Loads `choice` for `command` (named in every error): scenario, overrides, cost terms, calibrations, overlap.
ScenarioSetup load_scenario_setup(const ScenarioChoice& choice, const std::string& command);


struct LoadedMisses {
  std::unique_ptr<MissCurves> curves;
  std::string label;  // "measured (replayed top-k trace, steady state)" | "fitted (miss surface …)" | "given (…)"
  std::vector<std::string> fitted_to;  // field points (`run/point`) a calibrated surface's level was fitted to
  std::string surface_file;            // the surface's file ("" for a given fraction)
};

/// The miss curves of `choice` on `scenario` over `buffer_sizes` (the sizes a trace is replayed at).
LoadedMisses load_miss_curves(const MissChoice& choice, const Scenario& scenario,
                              const std::vector<int32_t>& buffer_sizes, const std::string& command);

}  // namespace hisparse::sim
