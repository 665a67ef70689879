// @brief `hisparse advise` as a library call: AdviseRequest (the scenario, its overrides, the miss model, the
// lengths or workload, the candidate buffer sizes and ratios) → the advice list with the labels its reports print.
// `replay --scenario` reuses the set-up and the mixes with its own trace and lengths.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/advise/advice_report.h"
#include "sim/advise/advice_table.h"
#include "sim/advise/layout_comparison.h"
#include "sim/advise/advisor.h"
#include "sim/api/scenario_setup.h"

namespace hisparse::sim {


/// The loaded scenario, the advisor's options, the miss curves over the candidate buffer sizes and the labels.
struct AdviceSetup {
  Scenario scenario;
  AdviseOptions options;
  std::unique_ptr<MissCurves> misses;
  AdviceRunInfo info;
};

/// Loads `request` for `command` ("advise", "replay"; named in every error).
AdviceSetup load_advice_setup(const AdviseRequest& request, const std::string& command);

/// One mix per seq_lens value, plus the decode mix of the workload; the planner's default lengths without either.
/// Without --seq-lens and --workload, an advice on a replayed trace (`misses` from a trace) is given at the trace's own
/// decode-step mix, as `replay --scenario` gives it: the lengths it was recorded at, not the default 16K–128K.
std::vector<ContextMix> advice_mixes(const AdviseRequest& request, const Scenario& scenario, const std::string& command,
                                     const MissCurves* misses = nullptr);

/// Warns where a recommendation rests on the miss model outside the range it was measured over.
void add_extrapolation_warnings(AdviceSetup& setup, const std::vector<Advice>& advices);

struct AdviseOutcome {
  AdviceSetup setup;
  std::vector<Advice> advices;
  // What the CLI prints of each advice, in standard types (sim/advise/advice_table.h); Python's AdviseResult too.
  std::vector<AdviceRecommendation> recommendations;  // one per mix
  std::vector<AdviceTableRow> table;                  // every mix's settings table, mix after mix
  double seconds = 0;  // set-up and advice, wall time
  std::string json() const { return advice_to_json(setup.scenario, advices, setup.info); }
};

/// Writes out_dir/advise.json, then (plots) runs scripts/plot_advise.py on it, then advise.md and advise.html with
/// the PNGs inlined; advise_*.png of an earlier run are removed first (advise_output.cpp).
void write_advice_files(const AdviseOutcome& outcome, const std::string& out_dir, bool plots);

/// `advise --layouts`: every layout of the deployment's GPUs on each default prompt shape (sim/advise/layout_comparison.h).
struct LayoutsOutcome {
  std::string scenario;
  std::vector<LayoutComparison> comparisons;
  std::vector<LayoutTableRow> table;  // the printed rows, in standard types
  std::string text;                   // what the CLI prints
};
LayoutsOutcome run_advise_layouts(const AdviseRequest& request);

/// The whole `advise`: set-up, one advice per mix, warnings. `progress`, if given, hears one line per mix.
AdviseOutcome run_advise(const AdviseRequest& request,
                         const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace hisparse::sim
