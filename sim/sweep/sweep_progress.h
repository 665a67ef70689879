// @brief A sweep's progress line: points done/total, work items, failures, elapsed and an ETA that weighs the items
// left by their estimated cost (sweep_cost.h), not by their count: a grid's cheap plan points finish first, and a
// count-based ETA then promised seconds for minutes of simulation (issue 40). On a terminal one line rewritten in
// place, in a log a line every 10 s (core/progress.h); the final line always.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/progress.h"
#include "sim/sweep/sweep_run.h"

namespace hisparse::sim::sweep {

class SweepProgress {
 public:
  /// `points`: the grid's point count; `item_seconds`: each item's estimated cost (any unit: only ratios matter).
  SweepProgress(size_t points, const std::vector<WorkItem>& items, std::vector<double> item_seconds,
                ProgressStyle style, std::string who, ProgressPrinter::Clock clock = {},
                ProgressPrinter::Sink sink = {}, double interval_seconds = -1);
  void item_done(size_t item, bool ok);
  /// An item an earlier run finished (read from the journal): counted as done, not in the ETA's rate.
  void item_resumed(size_t item);
  /// The final line (once).
  void finish();

  /// Seconds left at this run's rate of estimated cost done per second; negative before anything is done.
  double eta_seconds() const;
  /// The line as it would print now.
  std::string line() const;

 private:
  void count(size_t item, bool ok);
  const std::vector<WorkItem>& items_;
  std::vector<double> cost_;
  std::vector<int32_t> left_per_point_;
  std::string who_;
  ProgressPrinter printer_;
  int64_t items_done_ = 0, points_done_ = 0, failed_items_ = 0;
  double cost_left_ = 0, cost_computed_ = 0;  // cost_computed_: this run's, not the journal's
};

}  // namespace hisparse::sim::sweep
