// @brief Loading scenarios/ YAML into ModelSpec, HardwareSpec, DeploymentSpec and a resolved Scenario.
//
// Scenario directory search order: $HISPARSE_SCENARIO_DIR, ./scenarios, then the bundled scenarios: the installed
// Python package's data (set_bundled_scenario_dir) or else the source tree's scenarios/ (compile time).
// A deployment names its model and hardware (`model: deepseek-v3.2`), found under <dir>/models/<name>.yaml and
// <dir>/hardware/<name>.yaml; a value ending in .yaml is a path relative to the deployment file.
#pragma once

#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/hardware_spec.h"
#include "core/model_spec.h"

namespace hisparse {

ModelSpec load_model_spec(const std::string& path);
HardwareSpec load_hardware_spec(const std::string& path);
DeploymentSpec load_deployment_spec(const std::string& path);

/// `name_or_path`: a deployment name (scenarios/deployments/<name>.yaml) or a path to a deployment YAML.
Scenario load_scenario(const std::string& name_or_path);

/// Throws naming the scenario, its model and `command` unless the model has DeepSeek Sparse Attention's indexer:
/// for the commands that model HiSparse's selection and pools only (simulate, advise, replay's scenario defaults).
void require_sparse_indexer(const Scenario& scenario, const std::string& command);

/// The scenario directories searched, in order (existing ones only, each once): $HISPARSE_SCENARIO_DIR, then
/// ./scenarios of the working directory, then the bundled scenarios (below).
std::vector<std::string> scenario_dirs();

/// The same candidates, existing or not, as written (absolute): what a "not found" message says was looked at.
std::vector<std::string> scenario_dir_candidates();

/// Replaces the last candidate, the scenarios/ of the source tree the binary was built from, with `dir`: an installed
/// Python package carries its scenarios as package data and must not depend on the clone it was built from staying
/// put. Set once at load, before any lookup (not synchronised).
void set_bundled_scenario_dir(const std::string& dir);

/// Names (file stems) of the YAML files in <first dir holding it>/<kind> ("deployments", "models", "hardware").
std::vector<std::string> list_scenarios(const std::string& kind);

}  // namespace hisparse
