// @brief `hisparse fidelity --record`: writes each point's current error into its field file as recorded_error_pct,
// editing only that line (or inserting it after the point's `tolerance_pct:` line), so the file's comments, order and
// layout stay as their author wrote them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/fidelity/field_evaluation.h"

namespace hisparse::sim {

/// `text` (the field file `file`) with recorded_error_pct of each (point, error) set to the error, rounded to 0.1.
/// A point is the block from its line (FieldPoint::line) to the next point's; throws naming file and point when the
/// block has no `tolerance_pct:` line of its own (a point written in flow style).
std::string with_recorded_errors(const std::string& text, const std::string& file,
                                 const std::vector<std::pair<FieldPoint, double>>& errors);

/// Rewrites every run's field file (atomically); returns the files written.
std::vector<std::string> record_errors(const std::vector<RunResult>& runs);

}  // namespace hisparse::sim
