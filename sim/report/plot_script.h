// @brief Runs one of the matplotlib scripts in scripts/ on an output folder (plots are made by Python, not C++):
// the reports of plan, advise, replay, select and simulate, from the CLI and the Python module alike.
#pragma once

#include <string>

namespace hisparse::sim {

/// Finds scripts/<script> ($HISPARSE_SCRIPTS_DIR, then beside the scenario dir, then ./scripts) and runs it with
/// Debian's /usr/bin/python3 on out_dir. Throws hisparse::Error naming `command` when it is missing or fails.
void run_plot_script(const std::string& script, const std::string& out_dir, const std::string& command);

}  // namespace hisparse::sim
