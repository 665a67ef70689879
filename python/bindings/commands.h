// @brief What hisparse.plan / advise / validate call: the library's typed requests (sim/api, validate/), run in
// this process; the results come back as the JSON text the CLI writes and the text it prints, built in memory from
// the result (no argv, no temporary folder). Standard types and the requests' own headers only (module.cpp binds
// them), so the module still builds against a prebuilt facade library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/api/requests.h"
#include "validate/validate_request.h"

namespace hisparse::python {

struct CommandOutput {
  std::string json;  // plan.json / advise.json, byte for byte as the CLI writes it
  std::string text;  // what the CLI prints
};

/// run_plan; with `out_dir` not empty, also the CLI's files there (plots: run scripts/plot_plan.py).
CommandOutput plan(const sim::PlanRequest& request, const std::string& out_dir, bool plots);
/// run_advise; with `out_dir` not empty, also the CLI's files there.
CommandOutput advise(const sim::AdviseRequest& request, const std::string& out_dir, bool plots);

/// One row of the settings table (sim/api/settings_table.h) in standard types, for hisparse.settings() and the
/// keywords plan / advise walk against it.
struct SettingRow {
  std::string name, flag, sglang_alias, kind, unit, range, default_text, help;
  unsigned groups = 0;
  std::string out_of_range;  // a value out of range ("" for names and switches), for the tests of every front
  std::string example;       // a value in range
};
std::vector<SettingRow> settings();
/// Sets the setting `name` (or its SGLang alias) in `choice` from `text`, parsed and range-checked by the table as the
/// flags and the field files are; throws hisparse::Error "<where><name> <value>: expected <range>".
void set_setting(sim::ScenarioChoice& choice, const std::string& name, const std::string& text, const std::string& where);
/// The setting `name` in `choice` as text (true / false, integers, numbers as the messages print them), or "" unset.
std::string get_setting(const sim::ScenarioChoice& choice, const std::string& name);
/// The message every front gives for `text` out of `name`'s range, spelled `spelling`.
std::string setting_range_error(const std::string& name, const std::string& spelling, const std::string& text);

/// A byte size such as "1TiB", "141e9", "93.5GB" (the flags' reading), or hisparse::Error naming `what`.
double parse_bytes(const std::string& text, const std::string& what);

/// Where scenario names are found after $HISPARSE_SCENARIO_DIR and ./scenarios: the installed package's own copy
/// (core/scenario_loader.h, set_bundled_scenario_dir), so the package does not read the clone it was built from.
void set_bundled_scenario_dir(const std::string& dir);

/// run_validation, its banner printed to C's stdout as the CLI does.
validation::ValidateResult validate(const validation::ValidateRequest& request);

}  // namespace hisparse::python
