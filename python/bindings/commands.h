// @brief What hisparse.plan / advise / simulate / validate call: the library's typed requests (sim/api, validate/), run in
// this process; plan and advise come back as the JSON text the CLI writes and the text it prints, simulate as plain
// structs of its figures and tables, all built in memory from the result (no argv, no temporary folder). Standard types and the requests' own headers only (module.cpp binds
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

/// One run of hisparse.simulate: its identity, its figures (modelled; wall_s measured) and its two tables as the CSV
/// files hold them (requests_<tag>.csv, steps_<tag>.csv; Python's to_pandas reads them).
struct SimulateRunOutput {
  std::string mode, overlap, tag;
  int32_t concurrency = 0;  // closed-loop clients; 0: the workload's arrivals
  int64_t arrivals = 0, admitted = 0, finished = 0, rejected = 0, host_alloc_failures = 0, demotions = 0;
  uint64_t events = 0;
  bool ttft_modelled = false;
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0, steady_tokens_per_s = 0;
  double tpot_p50_ms = 0, tpot_p99_ms = 0, ttft_p50_ms = 0, ttft_p99_ms = 0, wait_p50_ms = 0, wait_p99_ms = 0;
  double batch_per_rank_mean = 0, hit_rate = 1, pcie_h2d_util = 0, io_stall_fraction = 0, tpot_slo_attainment = 0;
  double wall_s = 0;
  // The radix prefix cache (off: false and zeros): hit tokens / input tokens of finished requests, the prefill tokens
  // it saved, TTFT's mean, and the bytes of its pool it held per rank (peak, time-weighted mean); modelled.
  bool prefix_cache = false;
  double prefix_hit_rate = 0, ttft_mean_ms = 0, prefix_cache_peak_bytes = 0, prefix_cache_mean_bytes = 0;
  int64_t prefill_tokens_saved = 0;
  std::string requests_csv, steps_csv;
};

/// One row of a concurrency sweep's table (sweep.csv); ttft -1: not modelled.
struct SimulateSweepRow {
  int32_t concurrency = 0;
  std::string mode;
  double tokens_per_s = 0, tpot_p50_ms = 0, tpot_p99_ms = 0, wait_p50_ms = 0, wait_p99_ms = 0, ttft_p50_ms = -1,
         ttft_p99_ms = -1, batch_per_rank = 0, steady_tokens_per_s = 0;
  int64_t finished = 0, rejected = 0, host_alloc_failures = 0;
};

struct SimulateOutput {
  std::string scenario, workload, workload_source;
  int64_t workload_requests = 0;
  std::vector<SimulateRunOutput> runs;
  std::vector<SimulateSweepRow> sweep;  // several levels only
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
