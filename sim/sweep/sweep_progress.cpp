// @brief The sweep's progress: cost-weighted ETA, points counted as their last item comes back.
#include "sim/sweep/sweep_progress.h"

#include <algorithm>

#include <fmt/format.h>

namespace hisparse::sim::sweep {

SweepProgress::SweepProgress(size_t points, const std::vector<WorkItem>& items, std::vector<double> item_seconds,
                             ProgressStyle style, std::string who, ProgressPrinter::Clock clock,
                             ProgressPrinter::Sink sink, double interval_seconds)
    : items_(items),
      cost_(std::move(item_seconds)),
      left_per_point_(points, 0),
      who_(std::move(who)),
      printer_(style, std::move(clock), std::move(sink), interval_seconds) {
  cost_.resize(items.size(), 0.0);
  for (const auto& w : items)
    for (int64_t p : w.points) ++left_per_point_[static_cast<size_t>(p)];
  // An item estimated at nothing still counts a little, so a grid of such items still moves the ETA.
  for (double& c : cost_) c = std::max(c, 1e-6);
  for (double c : cost_) cost_left_ += c;
}

void SweepProgress::count(size_t item, bool ok) {
  ++items_done_;
  failed_items_ += !ok;
  cost_left_ -= cost_[item];
  for (int64_t p : items_[item].points)
    if (--left_per_point_[static_cast<size_t>(p)] == 0) ++points_done_;
}

void SweepProgress::item_done(size_t item, bool ok) {
  count(item, ok);
  cost_computed_ += cost_[item];
  if (printer_.due()) printer_.show(line());
}

void SweepProgress::item_resumed(size_t item) { count(item, true); }

double SweepProgress::eta_seconds() const {
  return progress_eta_seconds(cost_computed_, cost_computed_ + std::max(0.0, cost_left_), printer_.elapsed());
}

std::string SweepProgress::line() const {
  const int64_t total = static_cast<int64_t>(items_.size());
  const std::string eta = items_done_ == total      ? "done"
                          : cost_computed_ <= 0 ? "ETA unknown"
                                                : "ETA " + format_progress_time(eta_seconds());
  return fmt::format("{}: {}/{} points done ({}/{} work items{}), {:.1f} s elapsed, {}", who_, points_done_,
                     left_per_point_.size(), items_done_, total,
                     failed_items_ ? fmt::format(", {} failed", failed_items_) : std::string(), printer_.elapsed(), eta);
}

void SweepProgress::finish() { printer_.finish(line(), /*always=*/true); }

}  // namespace hisparse::sim::sweep
