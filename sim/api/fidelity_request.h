// @brief `hisparse fidelity` as a library call: FidelityRequest (the field files, the cost terms and calibrations as
// plan and simulate take them, whether to run the serving simulation) → FidelityReport (one RunResult per field run,
// sim/fidelity/fidelity_report.h renders it): each point through what `plan` and `simulate` load and run.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/requests.h"
#include "sim/fidelity/fidelity_report.h"

namespace hisparse::sim {

struct FidelityRequest {
  /// Field files or folders of them; empty: the field/ folder of the first scenario directory holding one
  /// ($HISPARSE_SCENARIO_DIR, ./scenarios, the source tree's scenarios/; core/scenario_loader.h).
  std::vector<std::string> field;
  std::string cost_params = "auto";       // as ScenarioChoice: auto (the hardware file's cost_model) or a YAML
  std::string calibration = "auto";       // auto | none | a YAML of `hisparse bench --calibrate`
  std::string step_calibration = "auto";  // auto | none | a YAML of `hisparse bench step --fit`
  std::string op_tables = "auto";         // as ScenarioChoice: auto (engine_ops.yaml's tables) | none | an index YAML
  std::optional<OverlapMode> overlap;     // unset: the cost parameters'
  MissChoice misses;                      // plan's default: the miss surface default_miss_surface(top_k)
  bool simulate = true;                   // closed-loop runs also through the serving simulation
  /// The suite's fits (sim/fidelity/field_fits.h): "auto" = fits.yaml in the folder of the first --field entry (the
  /// entry itself when a folder) where there is one; "none"; or a path.
  std::string fits = "auto";
  std::string command_line;               // for the reports' provenance
};

/// Closed-loop clients send this many waves of requests (docs/fidelity.md says why four are enough).
inline constexpr int kFidelityWaves = 8;

/// What one evaluation varies from the files (a fit's trial value, a leave-one-out refit) and which points it needs.
struct FieldTrial {
  std::set<std::string> points;  // "run/point" to evaluate; empty: every point (a run without one is skipped)
  std::map<std::string, std::vector<std::pair<std::string, SimTime>>> cost_terms;  // by run name: term, value
  std::map<std::string, double> miss_steady_scale;                                 // by run name
  std::map<std::string, double> efficiency_scale;                                  // by run name
  // Serve only the runs scored on simulate (a fit's trial: the others' points are scored on the plan's figures).
  bool serve_simulate_scored_only = false;
  bool breakdowns = false;  // also each DP-attention run's step by term (RunResult::breakdowns): the report's run only
};

/// Evaluates `runs` (loaded, or copies a fit or a setup range changed) under `trial`: each point as run_fidelity
/// reports it in-fit, before leave-one-out errors and setup ranges.
std::vector<RunResult> evaluate_field_runs(const FidelityRequest& request, const std::vector<FieldRun>& runs,
                                           const FieldTrial& trial,
                                           const std::function<void(const std::string&)>& progress = {});

/// Loads every field file and evaluates every point. `progress` (may be empty) hears one line per serving run.
FidelityReport run_fidelity(const FidelityRequest& request,
                            const std::function<void(const std::string&)>& progress = {});

}  // namespace hisparse::sim
