// @brief The up-front estimate of a long command's work (its size and its wall time at a measured rate), printed
// before the work starts, and the refusal of work that cannot finish in reasonable time unless --force is given.
#pragma once

#include <string>

namespace hisparse {

/// Work estimated longer than this is refused without --force: an hour of wall time (a guard against a mistyped
/// size such as `--concurrency 1000000`, not a measure of what is useful; --force runs it anyway).
inline constexpr double kWorkRefuseAboveSeconds = 3600;
/// Work estimated at least this long is announced on stderr before it starts: as long as a log's progress interval
/// (core/progress.h), so every command that will print progress says first what it is about to do.
inline constexpr double kWorkAnnounceAboveSeconds = 10;

struct WorkEstimate {
  std::string command;  // "simulate", "sweep", "trace gen"
  std::string size;     // what is to be done, in the command's units ("4,000,000 requests, 1.4e9 decode tokens")
  double seconds = 0;   // estimated wall time
  std::string basis;    // where the rate comes from ("measured: ... on ... (core/work_estimate.h)")
  std::string problem;  // non-empty: why it cannot finish apart from the time (e.g. the disk is too small)
};

/// "<command>: estimated <size>, about <h:mm:ss> (<basis>)".
std::string format_work_estimate(const WorkEstimate& e);

/// The estimate on a busy machine: the rates were measured with the cores free, and a 1-minute load average above the
/// core count may stretch the time up to load / cores (a sweep estimated at 16 s took 97 s under a load of 15 on 2
/// cores; a trace gen estimated at 4.5 s took 7 s under a load of 17): the basis adds that bound. The time itself,
/// and so the refusal, stays the free-core estimate, so the same command is refused or not whatever else runs.
WorkEstimate under_load(WorkEstimate e, double load_average, unsigned cores);

/// Throws hisparse::Error naming the estimate (under_load of this machine's load) and --force when the work is over
/// kWorkRefuseAboveSeconds or has a problem and `force` is false; otherwise prints the estimate on stderr when it is at least
/// kWorkAnnounceAboveSeconds (or forced past a refusal), unless HISPARSE_PROGRESS=0 or `quiet` (a command's --quiet).
void check_work_estimate(const WorkEstimate& e, bool force, bool quiet = false);

/// 1234567 → "1,234,567"; >= 1e12 in scientific notation ("1.1e+12").
std::string format_work_count(double n);

}  // namespace hisparse
