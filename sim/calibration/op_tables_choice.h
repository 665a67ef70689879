// @brief Which op tables (sim/optables/) a run's step model reads: by default the bundled index's tables of the
// scenario's hardware, for SGLang deployments; `--op-tables none` (today's modelled terms) or another index. Sets
// CostParams::op_tables (the tables and what they answer per term), adds one cost-terms row per term and returns the line reports print.
#pragma once

#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"

namespace hisparse::sim {

/// `flag`: auto (scenarios/measurements/engine_ops.yaml of the scenario directories) | none | an index YAML path.
/// The tables apply when the deployment's engine is sglang and the index holds tables whose `hardware` is the
/// scenario's hardware (its YAML stem); then every term the step model asks them for gets a row in
/// `params->sources` (kind measured, or modelled when absent or modelled from fewer GPUs) and the returned text
/// says, per term, which table file measured it and which stay modelled and by what rule. Returns "" when no table
/// applies under auto (the cost line is then what it was before op tables existed). Every table of the index is
/// read and checked whatever the hardware, so a table without provenance fails every run.
std::string apply_op_tables(const std::string& flag, const Scenario& scenario, CostParams* params);

}  // namespace hisparse::sim
