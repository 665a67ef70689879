// @brief `hisparse fidelity [--field DIR|FILE,...]`: every published field measurement (scenarios/field/*.yaml,
// docs/fidelity.md) through the plan's step model and capacity plan and, for closed-loop runs, the serving
// simulation; prints published vs tool vs in-fit and leave-one-out error per point and writes
// fidelity.json/.csv/.md/.html/.png. --check fails points worse than their recorded error, held-out points outside
// their band without an expected_miss, and fitted values the suite's own refit would move; --record writes the
// current errors into the field files (a looser one only with --accept-worse "reason"); --fit prints each fitted
// parameter's file value and refit, --write puts the refits where they live.
#include <ctime>
#include <string>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/scenario_flags.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"
#include "sim/api/fidelity_request.h"
#include "sim/fidelity/field_record.h"

namespace hisparse::apps {

namespace po = boost::program_options;

int run_fidelity(int argc, char** argv) {
  std::string field, out_dir = "fidelity_out", fits = "auto", accept_worse;
  po::options_description desc(
      "hisparse fidelity [--field DIR|FILE,...] [--out DIR] [--no-simulate] [--check] [--record [--accept-worse R]]\n"
      "                  [--fit [--write]] [--fits FILE|none] [--no-plots]\n\n"
      "Runs every published field measurement (one YAML per publication, docs/fidelity.md) through the plan's step\n"
      "model and capacity plan and, for closed-loop runs, `simulate --concurrency` with fixed-length requests; prints\n"
      "published vs tool vs error per point. Writes DIR/fidelity.json, .csv, .md, .html and fidelity.png.\n\noptions");
  desc.add_options()("help,h", "this help")(
      "field", po::value(&field), "field files or folders of them, comma-separated (default: scenarios/field, found "
      "as scenarios are: $HISPARSE_SCENARIO_DIR, ./scenarios, the source tree's)")(
      "out,o", po::value(&out_dir)->default_value(out_dir), "output directory")(
      "no-simulate", "skip the serving simulation (plan values only)")(
      "check", "exit 1 when a point's |error| exceeds |recorded_error_pct| + 0.5 or it has no recorded error")(
      "record", "write each point's current error (its LOO error where a fit uses it) into its field file as "
      "recorded_error_pct; refused for an error larger than recorded unless --accept-worse is given")(
      "accept-worse", po::value(&accept_worse), "with --record: the reason a larger error is accepted (kept in the "
      "file as accepted_worse: {date, reason, from, to})")(
      "fits", po::value(&fits)->default_value(fits), "the suite's fits: auto (fits.yaml beside the field files), none, "
      "or a file")(
      "fit", "print every fitted parameter's value in its file and the suite's own refit from its points")(
      "write", "with --fit: write each refit where it lives (a cost-model term, a field file's override)")(
      "no-plots", "skip scripts/plot_fidelity.py (the reports say the plot is missing)");
  add_scenario_flags(desc, kCostFlags | kMissFlags);
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  if (vm.count("check") && vm.count("record"))
    throw_error("fidelity: --check and --record together would check the errors just recorded; give one");
  if (vm.count("accept-worse") && !vm.count("record"))
    throw_error("fidelity: --accept-worse \"{}\" is for --record (it is kept beside the error it accepts)", accept_worse);
  if (vm.count("accept-worse") && accept_worse.empty())
    throw_error("fidelity: --accept-worse \"\": give the reason the larger error is accepted");
  if (vm.count("write") && !vm.count("fit")) throw_error("fidelity: --write writes the refits of --fit; give --fit");
  sim::FidelityRequest req;
  req.command_line = typed_command_line("fidelity", argc, argv);
  const sim::ScenarioChoice c = scenario_choice(vm, "", "fidelity");
  req.cost_params = c.cost_params;
  req.calibration = c.calibration;
  req.step_calibration = c.step_calibration;
  req.op_tables = c.op_tables;
  req.overlap = c.overlap;
  req.misses = miss_choice(vm, /*with_trace=*/false);
  req.simulate = !vm.count("no-simulate");
  req.fits = fits;
  if (vm.count("field")) {
    req.field = split_list(field);
    if (req.field.empty()) throw_error("fidelity: --field is empty (expected a folder or field files)");
  }

  const sim::FidelityReport report =
      sim::run_fidelity(req, [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  sim::write_fidelity_files(report, out_dir, !vm.count("no-plots"));
  fmt::print("{}", sim::fidelity_console_text(report));
  fmt::print("computed in {:.2f} s (plotting excluded); wrote {}/fidelity.json, fidelity.csv, fidelity.md, "
             "fidelity.html{}\n",
             report.seconds, out_dir, vm.count("no-plots") ? "" : ", fidelity.png");
  if (vm.count("fit")) {
    if (report.fits.empty()) throw_error("fidelity --fit: no fits file (give --fits FILE, or put {} beside the "
                                         "field files)", sim::kFitsFileName);
    for (const sim::FitResult& f : report.fits) {
      if (!f.applies) continue;
      fmt::print("fit {}: {} -> {}{}\n", f.fit.label(), sim::fitted_value_text(f.fit, f.file_value),
                 sim::fitted_value_text(f.fit, f.refit), f.kept ? " (kept: already at the minimum)" : "");
      if (!vm.count("write") || f.kept) continue;
      if (f.fit.kind == sim::FitKind::kMissSteadyScale) {
        fmt::print("  not written: {} holds the steady fractions × the scale; set {} in scripts/fit_miss_models.sh "
                   "and run it\n", f.fit.file, sim::fitted_value_text(f.fit, f.refit));
        continue;
      }
      write_file_atomically(f.fit.file, sim::with_fitted_value(read_file(f.fit.file), f.fit, f.refit));
      fmt::print("  wrote {}\n", f.fit.file);
    }
  }
  if (vm.count("record")) {
    char date[16] = {};
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    for (const std::string& f : sim::record_errors(report.runs, {accept_worse, date}))
      fmt::print("recorded the errors in {}\n", f);
    return 0;
  }
  if (vm.count("check")) {
    std::vector<std::string> failing = sim::check_failures(report.runs);
    const size_t worse = failing.size();
    for (const std::string& f : sim::band_failures(report.runs)) failing.push_back(f);
    for (const sim::FitResult& f : report.fits)
      if (const std::string d = sim::fit_drift(f); !d.empty()) failing.push_back(d);
    if (!failing.empty()) {
      fmt::print("check failed: {} point(s) worse than recorded, {} other failure(s):\n", worse,
                 failing.size() - worse);
      for (const std::string& f : failing) fmt::print("  {}\n", f);
      return 1;
    }
    fmt::print("check passed: no point is worse than its recorded error, every held-out point is within its band or "
               "has its expected_miss, every fitted value is the suite's own refit\n");
  }
  return 0;
}

}  // namespace hisparse::apps
