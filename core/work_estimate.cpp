// @brief The up-front work estimate: its line, its announcement on stderr and the refusal without --force.
#include "core/work_estimate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/progress.h"

namespace hisparse {

std::string format_work_count(double n) {
  if (!std::isfinite(n) || n >= 1e12) return fmt::format("{:.2g}", n);
  std::string digits = fmt::format("{}", static_cast<long long>(std::llround(n)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

namespace {

std::string time_text(double seconds) {
  // Beyond ten thousand hours h:mm:ss stops being readable: years say it better.
  if (seconds >= 3.6e7) return fmt::format("{:.3g} years", seconds / (365.25 * 86400));
  return format_progress_time(seconds);
}

}  // namespace

std::string format_work_estimate(const WorkEstimate& e) {
  return fmt::format("{}: estimated {}, about {} ({})", e.command, e.size, time_text(e.seconds), e.basis);
}

WorkEstimate under_load(WorkEstimate e, double load_average, unsigned cores) {
  if (cores == 0 || !(load_average > cores)) return e;
  const double factor = load_average / cores;
  e.basis += fmt::format("; with the cores free: this machine's load average of {:.1f} on {} cores may stretch it "
                         "up to × {:.1f}, about {}",
                         load_average, cores, factor, time_text(e.seconds * factor));
  return e;
}

void check_work_estimate(const WorkEstimate& estimate, bool force, bool quiet) {
  double load[1] = {0};
  const WorkEstimate e = ::getloadavg(load, 1) == 1
                             ? under_load(estimate, load[0], std::thread::hardware_concurrency())
                             : estimate;
  const bool too_long = !(e.seconds <= kWorkRefuseAboveSeconds);
  const bool refused = too_long || !e.problem.empty();
  if (refused && !force) {
    std::string why;
    if (too_long)
      why = fmt::format("more than the {} a command runs without --force", time_text(kWorkRefuseAboveSeconds));
    if (!e.problem.empty()) why += (why.empty() ? "" : ", and ") + e.problem;
    throw_error("{}. Refused: {}; reduce the size, or pass --force to run it anyway", format_work_estimate(e), why);
  }
  if (quiet || progress_style_by_default() == ProgressStyle::kOff) return;
  if (e.seconds >= kWorkAnnounceAboveSeconds || refused) {
    fmt::print(stderr, "{}{}\n", format_work_estimate(e), refused ? " (--force: running it anyway)" : "");
    std::fflush(stderr);
  }
}

}  // namespace hisparse
