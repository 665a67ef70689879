// @brief FidelityReport: every field run's results (sim/fidelity/field_evaluation.h) and what `hisparse fidelity`
// makes of them: the printed table with its summary line, fidelity.json / .csv, and fidelity.md / .html (one
// ReportDocument, sim/report) with the plot scripts/plot_fidelity.py draws from the JSON.
#pragma once

#include <string>
#include <vector>

#include "sim/fidelity/field_evaluation.h"
#include "sim/fidelity/field_fits.h"

namespace hisparse::sim {

/// A point declared in a field file but not scored yet (`pending:`), with its run.
struct PendingPoint {
  std::string run, file;
  FieldPoint point;
};

struct FidelityReport {
  std::vector<RunResult> runs;
  std::vector<PendingPoint> pending;  // every pending point of the loaded files, in file order
  std::string fits_file;          // the suite's fits ("" = none)
  std::vector<FitResult> fits;    // each fit: the file's value and the suite's refit
  std::string command_line;
  double seconds = 0;  // load and evaluation, plots excluded
};

/// The table (run, point, metric, published, plan, simulate, error %, plan-vs-sim %, recorded, status), each run's
/// cost terms, and the summary line "N of M points within their band".
std::string fidelity_console_text(const FidelityReport& report);
std::string fidelity_json(const FidelityReport& report);
std::string fidelity_csv(const FidelityReport& report);
std::string fidelity_markdown(const FidelityReport& report, bool with_plot_png);
std::string fidelity_html(const FidelityReport& report, const std::string& plot_png);

/// Writes out_dir/fidelity.json and .csv, then (plots) fidelity.png by scripts/plot_fidelity.py, then fidelity.md and
/// fidelity.html with it inlined; without plots a stale fidelity.png of an earlier run is removed. Every write atomic.
void write_fidelity_files(const FidelityReport& report, const std::string& out_dir, bool plots);

}  // namespace hisparse::sim
