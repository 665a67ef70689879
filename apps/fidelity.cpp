// @brief `hisparse fidelity [--field DIR|FILE,...]`: every published field measurement (scenarios/field/*.yaml,
// docs/fidelity.md) through the plan's step model and capacity plan and, for closed-loop runs, the serving
// simulation; prints published vs tool vs error per point and writes fidelity.json/.csv/.md/.html/.png. --check fails
// points worse than their recorded error; --record writes the current errors into the field files.
#include <string>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/scenario_flags.h"
#include "core/error.h"
#include "sim/api/fidelity_request.h"
#include "sim/fidelity/field_record.h"

namespace hisparse::apps {

namespace po = boost::program_options;

int run_fidelity(int argc, char** argv) {
  std::string field, out_dir = "fidelity_out";
  po::options_description desc(
      "hisparse fidelity [--field DIR|FILE,...] [--out DIR] [--no-simulate] [--check] [--record] [--no-plots]\n\n"
      "Runs every published field measurement (one YAML per publication, docs/fidelity.md) through the plan's step\n"
      "model and capacity plan and, for closed-loop runs, `simulate --concurrency` with fixed-length requests; prints\n"
      "published vs tool vs error per point. Writes DIR/fidelity.json, .csv, .md, .html and fidelity.png.\n\noptions");
  desc.add_options()("help,h", "this help")(
      "field", po::value(&field), "field files or folders of them, comma-separated (default: scenarios/field, found "
      "as scenarios are: $HISPARSE_SCENARIO_DIR, ./scenarios, the source tree's)")(
      "out,o", po::value(&out_dir)->default_value(out_dir), "output directory")(
      "no-simulate", "skip the serving simulation (plan values only)")(
      "check", "exit 1 when a point's |error| exceeds |recorded_error_pct| + 0.5 or it has no recorded error")(
      "record", "write each point's current error into its field file as recorded_error_pct")(
      "no-plots", "skip scripts/plot_fidelity.py (the reports say the plot is missing)");
  add_scenario_flags(desc, kCostFlags | kMissFlags);
  po::variables_map vm;
  if (!parse_flags(po::parse_command_line(argc, argv, desc), desc, vm)) return 0;
  if (vm.count("check") && vm.count("record"))
    throw_error("fidelity: --check and --record together would check the errors just recorded; give one");
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
  if (vm.count("record")) {
    for (const std::string& f : sim::record_errors(report.runs)) fmt::print("recorded the errors in {}\n", f);
    return 0;
  }
  if (vm.count("check")) {
    const std::vector<std::string> failing = sim::check_failures(report.runs);
    if (!failing.empty()) {
      fmt::print("check failed: {} point(s) worse than recorded:\n", failing.size());
      for (const std::string& f : failing) fmt::print("  {}\n", f);
      return 1;
    }
    fmt::print("check passed: no point is worse than its recorded error\n");
  }
  return 0;
}

}  // namespace hisparse::apps
