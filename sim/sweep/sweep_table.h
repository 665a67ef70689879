// @brief The results table of a sweep: one row per point in grid order, as CSV (every column), JSON and Markdown (one
// table per job kind, labelled measured or modelled). Deterministic text: no timings, no host or process names, so a
// local run and an MPI run of the same grid write the same bytes.
#pragma once

#include <string>
#include <vector>

#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_run.h"

namespace hisparse::sim::sweep {

/// `rows` holds one row per grid point, in grid order.
std::string table_csv(const Grid& grid, const std::vector<PointRow>& rows);
std::string table_json(const Grid& grid, const std::vector<PointRow>& rows);
std::string table_markdown(const Grid& grid, const std::vector<PointRow>& rows);

}  // namespace hisparse::sim::sweep
