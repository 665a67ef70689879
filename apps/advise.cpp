// @brief `hisparse advise --scenario S [--seq-lens …] [--workload W] [--trace T]`: the settings to launch SGLang with
// — HiSparse on/off, device_buffer_size, host_to_device_ratio, max_running_requests — that maximise decode goodput
// within the TPOT SLO, with the runner-up, the break-even and a Pareto plot. Writes advise.json, advise.md,
// advise.html and PNGs (scripts/plot_advise.py).
#include <algorithm>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/advise_setup.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "core/error.h"
#include "core/progress.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/advise/layout_comparison.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;

}  // namespace

int run_advise(int argc, char** argv) {
  AdviseArgs args;
  std::string out_dir = "advise_out";
  po::options_description desc(
      "hisparse advise --scenario S [--seq-lens 16K,32K,64K,128K] [--workload W] [--trace T] [--out DIR]\n\n"
      "Recommends how to launch SGLang on a decode deployment: HiSparse on or off, device_buffer_size,\n"
      "host_to_device_ratio and --max-running-requests, maximising decode goodput (tokens/s with every step within\n"
      "the TPOT SLO) by the planner's model: the batch shares one PCIe link per GPU, HBM holds each request's buffer\n"
      "and indexer keys, host DRAM holds the host pools. One advice per --seq-lens value, and one for the context mix\n"
      "of --workload. Prints the flags, the runner-up and the break-even; writes DIR/advise.json, advise.md,\n"
      "advise.html and advise_*.png.\n\noptions");
  add_advise_options(desc, args);
  desc.add_options()("out,o", po::value(&out_dir)->default_value(out_dir), "output directory")(
      "no-plots", "skip scripts/plot_advise.py (stale advise_*.png in DIR are removed)")(
      "verbose", "print the miss-model and cost lines in full (without it: one short line each, paths as file names)")(
      "layouts", "instead of the HiSparse settings: compare TP and DP attention + EP, colocated and PD, each with "
                 "HiSparse off and on, on the deployment's decode GPUs for short and long prompts (prints only)")(
      "help,h", "this help");
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;

  sim::AdviseRequest request = advise_request(args, vm, "advise");
  request.command_line = typed_command_line("advise", argc, argv);
  request.layouts = vm.count("layouts") > 0;
  if (request.layouts) {
    fmt::print("{}", sim::run_advise_layouts(request).text);
    return 0;
  }
  // One line per context mix, as progress (core/progress.h): rewritten on a terminal, every 10 s in a log.
  ProgressPrinter progress(progress_style_by_default());
  int mixes = 0;
  sim::AdviseOutcome outcome = sim::run_advise(request, [&](const std::string& line) {
    ++mixes;
    progress.show(fmt::format("{} (mix {}, elapsed {})", line, mixes, format_progress_time(progress.elapsed())));
  });
  progress.finish(fmt::format("advise: {} context mix{} evaluated in {}", mixes, mixes == 1 ? "" : "es",
                              format_progress_time(progress.elapsed())));
  outcome.setup.info.verbose = vm.count("verbose") > 0;
  const AdviseSetup& setup = outcome.setup;
  const std::vector<sim::Advice>& advices = outcome.advices;
  const double seconds = outcome.seconds;

  sim::write_advice_files(outcome, out_dir, !vm.count("no-plots"));
  // The answer first: the flags to launch SGLang with, one line per advice; the provenance and the reasons follow.
  for (const sim::AdviceRecommendation& r : outcome.recommendations)
    if (r.fits) fmt::print("launch SGLang, {}: {}\n", r.context, r.sglang_flags);
  fmt::print("{}", sim::advice_to_text(setup.scenario, advices, setup.info));
  fmt::print("advice computed in {:.2f} s (plotting excluded); wrote {}/advise.json, advise.md, advise.html{}\n", seconds,
             out_dir, vm.count("no-plots") ? "" : " and advise_*.png");
  return 0;
}

}  // namespace hisparse::apps
