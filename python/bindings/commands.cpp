// @brief hisparse.plan / advise / validate over the library's requests (see commands.h).
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
#include "sim/api/settings_table.h"
#include "validate/validate.h"

namespace hisparse::python {

CommandOutput plan(const sim::PlanRequest& request, const std::string& out_dir, bool plots) {
  const sim::PlanOutcome outcome = sim::run_plan(request);
  if (!out_dir.empty()) sim::write_plan_files(outcome, out_dir, plots);
  return {outcome.json(), sim::plan_console_text(outcome)};
}

CommandOutput advise(const sim::AdviseRequest& request, const std::string& out_dir, bool plots) {
  const sim::AdviseOutcome outcome = sim::run_advise(request);
  if (!out_dir.empty()) sim::write_advice_files(outcome, out_dir, plots);
  return {outcome.json(), sim::advice_to_text(outcome.setup.scenario, outcome.advices, outcome.setup.info)};
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
