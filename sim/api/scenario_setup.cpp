// @brief load_scenario_setup and load_miss_curves (see scenario_setup.h).
#include "sim/api/scenario_setup.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration_choice.h"
#include "sim/calibration/op_tables_choice.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::sim {

ScenarioSetup load_scenario_setup(const ScenarioChoice& c, const std::string& command) {
  ScenarioSetup out;
  out.scenario = load_scenario(c.scenario);
  if (c.require_sparse_indexer) require_sparse_indexer(out.scenario, "hisparse " + command);
  apply_overrides(c.overrides, out.scenario, command);
  if (c.overrides.host_reserve_bytes) out.host_reserve_bytes = *c.overrides.host_reserve_bytes;
  const std::string hbm = hbm_override_warning(out.scenario, c.overrides.hbm_bytes.has_value());
  if (!hbm.empty()) out.warnings.push_back(hbm);
  // The cost terms read the hardware file of the overridden scenario; the calibrations then replace measured terms.
  const std::string terms = load_cost_terms(c.cost_params, out.scenario, &out.cost);
  const std::string attention = apply_attention_table(c.attention_table, out.scenario, &out.cost);
  out.cost_line = terms + "; " + apply_calibrations(c.calibration, c.step_calibration, &out.scenario, &out.cost) +
                  "; " + attention;
  // The engine's kernels timed on this GPU, where the index holds them (nothing is added when no table applies).
  const std::string tables = apply_op_tables(c.op_tables, out.scenario, &out.cost);
  if (!tables.empty()) out.cost_line += "; " + tables;
  if (c.overlap) out.cost.overlap = *c.overlap;
  return out;
}

LoadedMisses load_miss_curves(const MissChoice& m, const Scenario& s, const std::vector<int32_t>& buffer_sizes,
                              const std::string& command) {
  LoadedMisses out;
  const int32_t K = s.deployment.hisparse.top_k;
  const std::string surface_name = m.surface.empty() ? default_miss_surface(K) : m.surface;
  std::unique_ptr<MissCurves> model;
  if (m.fraction) {
    const double f = *m.fraction;
    if (!(f >= 0 && f <= 1)) throw_error("{}: --miss-fraction {} (expected in [0, 1])", command, f);
    model = std::make_unique<MissCurves>(MissCurves::constant(f, fmt::format("--miss-fraction {}", f)));
    out.label = "given (--miss-fraction)";
  } else {
    MissSurface surface = load_miss_surface(surface_name);
    if (m.steady_scale) {
      // The file's fractions are already × its own scale; a trial scale replaces that one.
      if (!(*m.steady_scale > 0)) throw_error("{}: steady scale {} (expected > 0)", command, *m.steady_scale);
      MissCalibration c = surface.provenance.calibration.value_or(MissCalibration{});
      const double file_scale = c.steady_scale;
      c.steady_scale = *m.steady_scale / file_scale;
      calibrate_steady_level(surface, c);
      surface.provenance.calibration->steady_scale = *m.steady_scale;
    }
    out.surface_file = surface.file;
    // A trace replayed with a policy the surface lacks needs the surface only where the trace has no data.
    const std::string policy = surface.has_policy(m.policy) || m.trace.empty() ? m.policy : "sglang-lru";
    model = std::make_unique<MissCurves>(MissCurves::from_surface(surface, policy, K));
    out.label = surface.source_label(surface_name);
    if (surface.provenance.calibration) out.fitted_to = surface.provenance.calibration->fitted_to;
  }
  if (m.trace.empty()) {
    out.curves = std::move(model);
    return out;
  }
  out.curves = std::make_unique<MissCurves>(MissCurves::from_trace(
      m.trace, m.policy, buffer_sizes, latent_row_bytes(s.model, s.deployment.kv_dtype), m.threads,
      *model, K, m.rescale_trace_top_k));
  out.label = "measured (replayed top-k trace, steady state)";
  return out;
}

}  // namespace hisparse::sim
