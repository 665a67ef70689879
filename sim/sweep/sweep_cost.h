// @brief What each sweep work item is expected to cost (wall seconds on one core, from measured rates), so the
// sweep's ETA weighs the work left by its cost rather than by its count (issue 40: a grid's cheap plan points came
// first and its ETA said 0:10 for 57 s of work) and the sweep can say up front how long it will take.
#pragma once

#include <string>
#include <vector>

#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_run.h"

namespace hisparse::sim::sweep {

/// The estimated seconds of every item, in the items' order. Opens each replay trace (its index) and loads each
/// simulate workload once. Estimates: within a factor of about 2 of the measured runs behind them.
std::vector<double> work_item_seconds(const Grid& grid, const std::vector<WorkItem>& items);

/// Where the rates come from, for the estimate's line.
const char* work_item_basis();

}  // namespace hisparse::sim::sweep
