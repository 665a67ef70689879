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
#include "sim/api/scenario_overrides.h"
#include "sim/cost/cost_params.h"
#include "sim/miss/miss_curve.h"

namespace hisparse::sim {

/// What a command names to build its scenario and cost model.
struct ScenarioChoice {
  std::string scenario;               // deployment name (scenarios/deployments) or YAML path
  ScenarioOverrides overrides;
  std::string cost_params = "auto";   // auto (the hardware file's cost_model) or a YAML path
  std::string calibration = "auto";   // auto | none | a YAML of `hisparse bench --calibrate`
  std::string step_calibration = "auto";  // auto | none | a YAML of `hisparse bench step --fit`
  std::optional<OverlapMode> overlap;     // unset: the cost parameters'
  bool require_sparse_indexer = false;    // advise and simulate model HiSparse only
};

/// The loaded set-up: the scenario with the overrides and calibrations applied, and its cost model.
struct ScenarioSetup {
  Scenario scenario;
  CostParams cost;
  std::string cost_line;          // "cost terms: … ; swap-in/PCIe calibrated (…)…": which terms and measurements
  double host_reserve_bytes = 0;  // per decode node (plan, advise)
};

/// Loads `choice` for `command` (named in every error): scenario, overrides, cost terms, calibrations, overlap.
ScenarioSetup load_scenario_setup(const ScenarioChoice& choice, const std::string& command);

/// Where the misses of plan / advise / replay --scenario come from. A given fraction or the surface (default
/// kDefaultMissSurface) is the model; a trace, when given, is replayed at every buffer size and the model fills in
/// where it measured nothing.
struct MissChoice {
  std::string surface;              // miss surface name or .yaml path ("" = kDefaultMissSurface)
  std::optional<double> fraction;   // a constant per-layer miss fraction instead of the surface, in [0, 1]
  std::string trace;                // top-k trace replayed at every buffer size ("" = none)
  std::string policy = "sglang-lru";
  int threads = 1;                  // replay threads for the trace (as MissCurves::from_trace reads it)
  bool rescale_trace_top_k = false; // a trace of another top_k is replayed at the same H/K, applied by n/H
};

struct LoadedMisses {
  std::unique_ptr<MissCurves> curves;
  std::string label;  // "measured (replayed top-k trace, steady state)" | "fitted (miss surface …)" | "given (…)"
};

/// The miss curves of `choice` on `scenario` over `buffer_sizes` (the sizes a trace is replayed at).
LoadedMisses load_miss_curves(const MissChoice& choice, const Scenario& scenario,
                              const std::vector<int32_t>& buffer_sizes, const std::string& command);

}  // namespace hisparse::sim
