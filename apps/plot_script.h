// @brief The commands' name for the library's plot-script runner (sim/report/plot_script.h).
#pragma once

#include "sim/report/plot_script.h"

namespace hisparse::apps {

using sim::run_plot_script;

}  // namespace hisparse::apps
