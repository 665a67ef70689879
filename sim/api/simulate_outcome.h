// @brief `hisparse simulate` as one library call: SimulateRequest → run_simulate → SimulateOutcome (the loaded
// set-up, one SimulateRun per mode × overlap, or per level × mode for a concurrency sweep, and the sweep's table),
// with the text the CLI prints and the files it writes (simulate_output.cpp). The CLI, the Python module and the
// sweep fill a request; the CLI also runs the steps one by one to print and write as each run finishes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/api/simulate_request.h"
#include "sim/engine/chrome_trace.h"
#include "sim/serving/concurrency_sweep.h"
#include "sim/serving/serving_report.h"

namespace hisparse::sim {

/// One serving run of the outcome and what the reports take from it.
struct SimulateRun {
  KvMode mode = KvMode::kHiSparse;
  OverlapMode overlap = OverlapMode::kNone;
  ClientSpec clients;                 // concurrency 0: the workload's arrivals
  std::string tag;                    // "<mode>_<overlap>": the run's file names
  bool done = false;
  ServingResult result;               // emptied after the hook when SimulateHooks::keep_results is false
  ChromeTrace timeline;               // the window's spans (disabled: no timeline file)
  ServingSummary summary;
  std::string summary_json;           // summary_<tag>.json without its newline; an element of report.json's runs
  double steady_tokens_per_s = 0;     // steady_window(result): every client in flight
  double wall_s = 0;                  // measured: the run's wall time
};

struct SimulateOutcome {
  SimulationSetup setup;
  std::vector<KvMode> modes;
  std::vector<OverlapMode> overlaps;  // the sweep runs the first only
  std::vector<int32_t> levels;        // closed-loop levels (empty: arrivals); several: a sweep
  std::vector<SimulateRun> runs;      // in order: mode-major then overlap, or level-major then mode (a sweep)
  SimTime timeline_begin = 0, timeline_end = 0;
  std::optional<SweepTable> sweep;    // several levels, once every run is done
  bool is_sweep() const { return levels.size() > 1; }
  /// The requests every run together sends (the progress total).
  int64_t requests_total() const;
};

struct SimulateHooks {
  /// Requests finished or rejected so far over every run together.
  std::function<void(int64_t done)> on_progress;
  /// After each run, before the next starts (the CLI prints and writes here).
  std::function<void(const SimulateOutcome&, SimulateRun&)> on_run;
  /// false: each run's ServingResult and timeline are freed after on_run (the CLI keeps one run's in memory at a time).
  bool keep_results = true;
};

/// A run's row of the sweep table (its figures, ttft -1 where not modelled); Python's SimulateRun holds it too.
SweepPoint sweep_point(const SimulateRun& run);

/// Throws unless `n` requests per level is in [1, 10^8] (`--num-requests`; 0 in a request means the default).
void check_num_requests(int64_t n);
/// Loads the set-up, checks the request and lists its runs (nothing is simulated yet); throws hisparse::Error
/// naming the flag at fault. `command` opens the errors ("sweep <point>" for a sweep's).
SimulateOutcome prepare_simulate(const SimulateRequest& request, const std::string& command = "simulate");
/// The up-front estimate of every run (sim/serving/run_estimate.h): printed when long, refused past an hour unless
/// `force` (core/work_estimate.h).
void check_simulate_work(const SimulateOutcome& outcome, bool force);
/// Runs every run of a prepared outcome in order, then fills the sweep table.
void run_simulate_runs(SimulateOutcome& outcome, const SimulateHooks& hooks = {});
/// prepare_simulate, check_simulate_work (when request.check_work), run_simulate_runs.
SimulateOutcome run_simulate(const SimulateRequest& request, const SimulateHooks& hooks = {},
                             const std::string& command = "simulate");

/// What `hisparse simulate` prints before its runs: the launch flags, the set-up's notes, the ranks, the cost model
/// (folded to one line each unless `verbose`).
std::string simulate_header_text(const SimulateOutcome& outcome, bool verbose);
/// What it prints after one run: the run's line and its transfer / step / MTP lines, or a sweep level's line. Needs
/// the run's result.
std::string simulate_run_text(const SimulateOutcome& outcome, const SimulateRun& run);
/// After every run: the sweep's table and crossover ("" without a sweep).
std::string simulate_footer_text(const SimulateOutcome& outcome);
/// Every line above, in the CLI's order (Python's text).
std::string simulate_console_text(const SimulateOutcome& outcome, bool verbose);
/// The line naming what was written to `out_dir`.
std::string simulate_wrote_text(const SimulateOutcome& outcome, const std::string& out_dir, bool plots);

/// One run's files: summary_<tag>.json, requests_<tag>.csv, steps_<tag>.csv and, with a window, timeline_<tag>.json.
/// Needs the run's result; a sweep's runs write none.
void write_simulate_run_files(const SimulateRun& run, const std::string& out_dir);
/// report.json: the scenario, the workload and every run's summary.
std::string simulate_report_json(const SimulateOutcome& outcome);
/// The outcome's files in `out_dir` (created): every run's files (unless `runs_written`) and report.json, or a
/// sweep's sweep.json, sweep.csv and (plots) sweep.png.
void write_simulate_files(const SimulateOutcome& outcome, const std::string& out_dir, bool plots,
                          bool runs_written = false);

}  // namespace hisparse::sim
