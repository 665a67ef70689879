// @brief `hisparse fidelity --record`: writes each point's current error into its field file as recorded_error_pct,
// editing only that line (or inserting it after the point's `tolerance_pct:` line), so the file's comments, order and
// layout stay as their author wrote them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/fidelity/field_evaluation.h"

namespace hisparse::sim {

/// The lines of a YAML text as --record and --fit --write edit them, and back (a missing final newline kept missing).
std::vector<std::string> split_lines(const std::string& text);
std::string join_lines(const std::vector<std::string>& lines, const std::string& original);

/// `text` (the field file `file`) with recorded_error_pct of each (point, error) set to the error, rounded to 0.1,
/// and, for each point id in `accepted`, its `accepted_worse:` line (a one-line mapping under recorded_error_pct,
/// replacing an earlier one). A point is the block from its line (FieldPoint::line) to the next point's; throws
/// naming file and point when the block has no `tolerance_pct:` line of its own (a point written in flow style).
std::string with_recorded_errors(const std::string& text, const std::string& file,
                                 const std::vector<std::pair<FieldPoint, double>>& errors,
                                 const std::map<std::string, AcceptedWorse>& accepted = {});

/// The error --record writes for a point: its scored error (leave-one-out where a fit uses it), rounded to 0.1.
double recorded_value(const PointResult& point);
/// "run/point: recorded r, now e" for each point whose new |error| exceeds its recorded |error| beyond rounding.
std::vector<std::string> looser_than_recorded(const std::vector<RunResult>& runs);

/// What `--record` may do to a looser error: nothing (reason empty), or record it with this reason and date.
struct AcceptWorse {
  std::string reason;
  std::string date;  // YYYY-MM-DD
};

/// Rewrites every run's field file (atomically); returns the files written. Throws, writing nothing, when some point
/// would be recorded looser than it is and `accept.reason` is empty, naming each point; with a reason, each such
/// point gets `accepted_worse: {date, reason, from, to}` beside its new recorded_error_pct.
std::vector<std::string> record_errors(const std::vector<RunResult>& runs, const AcceptWorse& accept = {});

}  // namespace hisparse::sim
