// @brief What hisparse.plan / advise / simulate / validate call: the library's typed requests (sim/api, validate/), run
// in this process; their outcomes come back as plain structs of figures and tables (the rows the CLI prints, which
// module.cpp binds as they are), plus the JSON text the CLI writes and the text it prints, all built in memory from
// the result (no argv, no temporary folder). Standard types and the requests' and tables' own headers only, so the
// module still builds against a prebuilt facade library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/advise/advice_table.h"
#include "sim/advise/layout_comparison.h"
#include "sim/api/requests.h"
#include "sim/plan/plan_table.h"
#include "sim/serving/concurrency_sweep.h"
#include "validate/validate_request.h"

namespace hisparse::python {

/// hisparse.plan's outcome: the table the CLI prints (sim/plan/plan_table.h), the warnings, plan.json and the text.
struct PlanOutput {
  std::string scenario;
  std::vector<sim::PlanTableRow> rows;
  std::vector<std::string> warnings;
  std::string json;  // plan.json, byte for byte as the CLI writes it
  std::string text;  // what the CLI prints
};

/// hisparse.advise's outcome: each mix's recommendation and settings table (sim/advise/advice_table.h), the
/// warnings, advise.json and the text.
struct AdviseOutput {
  std::string scenario;
  std::vector<sim::AdviceRecommendation> recommendations;
  std::vector<sim::AdviceTableRow> rows;
  std::vector<std::string> warnings;
  std::string json;  // advise.json, byte for byte as the CLI writes it
  std::string text;  // what the CLI prints after its "launch SGLang" lines
};

/// hisparse.advise(layouts=True)'s outcome: `advise --layouts`' rows (sim/advise/layout_comparison.h) and its text.
struct AdviseLayoutsOutput {
  std::string scenario;
  std::vector<sim::LayoutTableRow> rows;
  std::string text;  // what the CLI prints
};

/// run_plan; with `out_dir` not empty, also the CLI's files there (plots: run scripts/plot_plan.py).
PlanOutput plan(const sim::PlanRequest& request, const std::string& out_dir, bool plots);
/// run_advise; with `out_dir` not empty, also the CLI's files there.
AdviseOutput advise(const sim::AdviseRequest& request, const std::string& out_dir, bool plots);
/// run_advise_layouts (prints only, as the CLI: no files).
AdviseLayoutsOutput advise_layouts(const sim::AdviseRequest& request);

/// One run of hisparse.simulate: the figures a sweep's row holds (sim/serving/concurrency_sweep.h, filled by
/// sim::sweep_point: modelled), its identity, its other figures (wall_s measured) and its two tables as the CSV files
/// hold them (requests_<tag>.csv, steps_<tag>.csv; Python's to_pandas reads them).
struct SimulateRunOutput : sim::SweepPoint {
  std::string overlap, tag;
  int64_t arrivals = 0, admitted = 0, demotions = 0;
  uint64_t events = 0;
  bool ttft_modelled = false;  // false: ttft_p50_ms and ttft_p99_ms are -1
  double tokens_per_s_per_gpu = 0, hit_rate = 1, pcie_h2d_util = 0, io_stall_fraction = 0, tpot_slo_attainment = 0;
  double wall_s = 0;
  // The radix prefix cache (off: false and zeros): hit tokens / input tokens of finished requests, the prefill tokens
  // it saved, TTFT's mean, and the bytes of its pool it held per rank (peak, time-weighted mean); modelled.
  bool prefix_cache = false;
  double prefix_hit_rate = 0, ttft_mean_ms = 0, prefix_cache_peak_bytes = 0, prefix_cache_mean_bytes = 0;
  int64_t prefill_tokens_saved = 0;
  // --admission v2 (else "" and zeros): the coordinator's rules, its admissions by outcome (cpu_ref::V2Admit: run as
  // V2, or as standard for one of five reasons) and the partial prefix evictions; modelled.
  std::string v2_coordinator;
  int64_t v2_admitted_as_v2 = 0, v2_standard_no_whole_page = 0, v2_standard_shorter_than_buffer = 0,
          v2_standard_host_capacity = 0, v2_standard_indexer_pages = 0, v2_standard_temp_buffer = 0;
  int64_t v2_evictions = 0, v2_evicted_tokens = 0;
  double v2_evicted_share_mean = 0;
  std::string requests_csv, steps_csv;
};

struct SimulateOutput {
  std::string scenario, workload, workload_source;
  int64_t workload_requests = 0;
  std::vector<SimulateRunOutput> runs;
  std::vector<sim::SweepPoint> sweep;  // several levels only
  int32_t crossover = -1;               // the sweep's (-1: none)
  std::string text;                     // what the CLI prints (without its "wrote" line)
};

/// run_simulate; with `out_dir` not empty, also the CLI's files there, byte for byte (plots: scripts/plot_sweep.py).
SimulateOutput simulate(const sim::SimulateRequest& request, const std::string& out_dir, bool plots);
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
