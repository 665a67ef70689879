// @brief What `hisparse advise` prints and writes: the terminal summary with the SGLang flags, advise.json (every
// candidate, the break-even scans, the trade-off curves), advise.md and advise.html (plots embedded).
#pragma once

#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "sim/advise/advisor.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

/// Facts about the run printed beside the advice; each figure family carries the label of where it comes from.
struct AdviceRunInfo {
  std::string command_line;
  std::string miss_source;      // MissCurves::description()
  std::string miss_label;       // "measured (replayed trace …)" | "fitted (miss surface …)" | "given (--miss-fraction)"
  std::string cost_label;       // "modelled (roofline …)" | "modelled; swap-in and copy calibrated (…)"
  std::vector<std::string> warnings;
  bool verbose = true;          // false: the miss-model and cost lines folded to one short line each (sim/report/fold_line.h)
};

using AdvicePlot = DocPlot;

/// The PNGs scripts/plot_advise.py writes for `count` advices (one Pareto pair and one break-even plot each).
std::vector<AdvicePlot> advice_plot_list(size_t count);

std::string advice_to_text(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info);
std::string advice_to_json(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info);
std::string advice_to_markdown(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info,
                               const std::vector<AdvicePlot>& plots);
std::string advice_to_html(const Scenario& s, const std::vector<Advice>& advices, const AdviceRunInfo& info,
                           const std::vector<AdvicePlot>& plots);

/// Per device_buffer_size, the best candidate of that H (its best ratio): the buffer sweep the reports print.
/// Full KV comes first under H = 0. Indices into advice.candidates.
std::vector<int> buffer_sweep(const Advice& advice);

}  // namespace hisparse::sim
