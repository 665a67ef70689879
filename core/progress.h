// @brief Progress of long work on stderr: "<what>: i/N (xx %), elapsed m:ss, ETA m:ss", at most once a second.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hisparse {

/// Seconds left if the rest goes at the rate so far; negative when nothing is done yet (no rate to go by).
double progress_eta_seconds(double done, double total, double elapsed_seconds);

/// m:ss (h:mm:ss from an hour on); "?" for a negative (unknown) time.
std::string format_progress_time(double seconds);

/// Whether progress is shown when a command does not say: HISPARSE_PROGRESS=1 forces it on (batch logs, tests),
/// HISPARSE_PROGRESS=0 off; otherwise on only when stderr is a terminal, so logs and pipes stay as they were.
bool progress_wanted_by_default();

/// Seconds between two progress lines: $HISPARSE_PROGRESS_INTERVAL if set (>= 0; 0 = every update, for tests), else 1.
double progress_interval_seconds();

/// Rate-limited progress of `total` units of work. Silent unless enabled; the clock and the sink are injectable so
/// tests can check the arithmetic and the rate limit without sleeping.
class ProgressReporter {
 public:
  using Clock = std::function<double()>;                   // seconds, monotonic
  using Sink = std::function<void(const std::string&)>;    // one line, without its newline

  ProgressReporter(std::string what, double total, bool enabled, std::string unit = "", Clock clock = {},
                   Sink sink = {}, double interval_seconds = progress_interval_seconds());

  /// `done` units are finished; prints when the last line is at least the interval old.
  void update(double done);
  /// The final line ("... done in m:ss"), once; nothing if disabled.
  void finish();

  /// The line for `done` units at `now` (seconds on the reporter's clock).
  std::string line(double done, double now) const;
  bool enabled() const { return enabled_; }

 private:
  std::string what_, unit_;
  double total_;
  bool enabled_;
  Clock clock_;
  Sink sink_;
  double interval_;
  double start_ = 0, last_print_ = 0, done_ = 0;
  bool finished_ = false;
};

}  // namespace hisparse
