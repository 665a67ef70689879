// @brief hisparse.plan / advise / simulate / validate over the library's requests (see commands.h).
#include "python/bindings/commands.h"

#include <cstdio>

#include <fmt/format.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "cuda/runtime.h"
#include "python/bindings/facade.h"
#include "sim/api/advise_request.h"
#include "sim/api/plan_request.h"
#include "sim/api/simulate_outcome.h"
#include "sim/api/settings_table.h"
#include "validate/validate.h"

namespace hisparse::python {

PlanOutput plan(const sim::PlanRequest& request, const std::string& out_dir, bool plots) {
  const sim::PlanOutcome outcome = sim::run_plan(request);
  if (!out_dir.empty()) sim::write_plan_files(outcome, out_dir, plots);
  return {outcome.scenario.deployment.name, outcome.table, outcome.plan.warnings, outcome.json(),
          sim::plan_console_text(outcome)};
}

AdviseOutput advise(const sim::AdviseRequest& request, const std::string& out_dir, bool plots) {
  const sim::AdviseOutcome outcome = sim::run_advise(request);
  if (!out_dir.empty()) sim::write_advice_files(outcome, out_dir, plots);
  return {outcome.setup.scenario.deployment.name, outcome.recommendations, outcome.table, outcome.setup.info.warnings,
          outcome.json(), sim::advice_to_text(outcome.setup.scenario, outcome.advices, outcome.setup.info)};
}

AdviseLayoutsOutput advise_layouts(const sim::AdviseRequest& request) {
  sim::LayoutsOutcome outcome = sim::run_advise_layouts(request);
  return {outcome.scenario, std::move(outcome.table), std::move(outcome.text)};
}

namespace {

SimulateRunOutput run_output(const sim::SimulateRun& run) {
  const sim::ServingResult& r = run.result;
  const sim::ServingSummary& s = run.summary;
  SimulateRunOutput o;
  static_cast<sim::SweepPoint&>(o) = sim::sweep_point(run);
  o.overlap = sim::to_string(run.overlap);
  o.tag = run.tag;
  o.arrivals = r.arrivals;
  o.admitted = r.admitted;
  o.demotions = r.demotions;
  o.events = r.events;
  o.ttft_modelled = sim::ttft_modelled(r);
  o.tokens_per_s_per_gpu = s.tokens_per_s_per_gpu;
  o.hit_rate = s.hit_rate;
  o.pcie_h2d_util = s.pcie_h2d_util;
  o.io_stall_fraction = s.io_stall_fraction;
  o.tpot_slo_attainment = s.tpot_slo_attainment;
  o.wall_s = run.wall_s;
  o.prefix_cache = r.prefix_cache;
  o.prefix_hit_rate = sim::prefix_hit_rate(r);
  o.ttft_mean_ms = s.ttft_ms.mean;
  o.prefix_cache_peak_bytes = static_cast<double>(r.prefix_peak_tokens_per_rank) * r.prefix_bytes_per_token;
  o.prefix_cache_mean_bytes = r.prefix_mean_tokens_per_rank * r.prefix_bytes_per_token;
  o.prefill_tokens_saved = r.prefix_hit_tokens;
  o.v2_coordinator = r.v2_coordinator;
  const auto& a = r.v2_admissions;  // indexed by cpu_ref::V2Admit
  o.v2_admitted_as_v2 = a[0];
  o.v2_standard_no_whole_page = a[1];
  o.v2_standard_shorter_than_buffer = a[2];
  o.v2_standard_host_capacity = a[3];
  o.v2_standard_indexer_pages = a[4];
  o.v2_standard_temp_buffer = a[5];
  o.v2_evictions = r.v2_evictions;
  o.v2_evicted_tokens = r.v2_evicted_tokens;
  o.v2_evicted_share_mean = r.v2_evicted_share_mean;
  o.requests_csv = sim::requests_csv(r);
  o.steps_csv = sim::steps_csv(r);
  return o;
}

}  // namespace

SimulateOutput simulate(const sim::SimulateRequest& request, const std::string& out_dir, bool plots) {
  sim::SimulateRequest req = request;
  req.setup.require_sparse_indexer = true;  // as `hisparse simulate` sets it: HiSparse needs a sparse indexer
  const sim::SimulateOutcome outcome = sim::run_simulate(req);
  if (!out_dir.empty()) sim::write_simulate_files(outcome, out_dir, plots);
  SimulateOutput o;
  o.scenario = outcome.setup.scenario.deployment.name;
  o.workload = outcome.setup.workload.name;
  o.workload_source = outcome.setup.workload.source;
  o.workload_requests = static_cast<int64_t>(outcome.setup.workload.requests.size());
  for (const sim::SimulateRun& run : outcome.runs) o.runs.push_back(run_output(run));
  if (outcome.sweep) {
    o.sweep = outcome.sweep->points;
    o.crossover = outcome.sweep->crossover;
  }
  o.text = sim::simulate_console_text(outcome, /*verbose=*/false);
  return o;
}

double parse_bytes(const std::string& text, const std::string& what) {
  return parse_byte_size(text, what);
}

namespace {

const sim::Setting& setting_named(const std::string& name) {
  const sim::Setting* s = sim::find_setting(name);
  if (!s) throw_error("{}: no such setting (hisparse.settings() lists them)", name);
  return *s;
}

const char* kind_name(sim::SettingKind k) {
  switch (k) {
    case sim::SettingKind::kInt:
    case sim::SettingKind::kInt64: return "int";
    case sim::SettingKind::kReal: return "float";
    case sim::SettingKind::kBytes: return "bytes";
    case sim::SettingKind::kChoice: return "choice";
    case sim::SettingKind::kText: return "text";
    case sim::SettingKind::kBool: return "bool";
  }
  return "text";
}

}  // namespace

std::vector<SettingRow> settings() {
  std::vector<SettingRow> rows;
  for (const sim::Setting& s : sim::settings_table())
    rows.push_back({s.name, s.flag, s.sglang_alias ? s.sglang_alias : "", kind_name(s.kind), s.unit,
                    sim::range_text(s), s.default_text, sim::setting_help(s), s.groups,
                    sim::out_of_range_example(s).value_or(""), sim::in_range_example(s)});
  return rows;
}

void set_setting(sim::ScenarioChoice& choice, const std::string& name, const std::string& text, const std::string& where) {
  sim::set_setting(choice, setting_named(name), text, where, name);
}

std::string get_setting(const sim::ScenarioChoice& choice, const std::string& name) {
  const std::optional<sim::SettingValue> v = setting_named(name).get(choice);
  return v ? sim::value_text(*v) : "";
}

std::string setting_range_error(const std::string& name, const std::string& spelling, const std::string& text) {
  const sim::Setting& s = setting_named(name);
  return sim::range_error(s, spelling, sim::parse_setting(s, text, "", spelling));
}

void set_bundled_scenario_dir(const std::string& dir) { hisparse::set_bundled_scenario_dir(dir); }

validation::ValidateResult validate(const validation::ValidateRequest& request) {
  validation::ValidateResult r = validation::run_validation(request, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  std::fflush(stdout);
  return r;
}

CudaStatus cuda_status() {
  CudaStatus s;
#ifdef HISPARSE_HAVE_CUDA
  s.built = true;
#endif
  s.available = cuda::cuda_available(&s.why);
  if (s.available) s.device = cuda::device_name();
  return s;
}

void flush_stdout() { std::fflush(stdout); }

}  // namespace hisparse::python
