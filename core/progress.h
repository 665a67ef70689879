// @brief Progress of long work on stderr: "<what>: i/N (xx %), elapsed m:ss, ETA m:ss". On a terminal one line
// rewritten in place (at most once a second); in a log or a pipe a line every 10 s, so a batch job's log shows the
// work is alive without filling up; HISPARSE_PROGRESS=0 turns it off.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hisparse {

/// Seconds left if the rest goes at the rate so far; negative when nothing is done yet (no rate to go by). `done` and
/// `total` may be in any unit of work (items, or estimated seconds of each item: then the ETA weighs work by its cost).
double progress_eta_seconds(double done, double total, double elapsed_seconds);

/// m:ss (h:mm:ss from an hour on); "?" for a negative (unknown) time.
std::string format_progress_time(double seconds);

/// How progress shows: kOff (nothing), kLog (whole lines, a new one per interval: logs, pipes, tests) or kTerminal
/// (one line rewritten in place with "\r" and erase-to-end-of-line, ended by a newline at the end).
enum class ProgressStyle { kOff, kLog, kTerminal };

/// The style when a command does not say: HISPARSE_PROGRESS=0 → kOff, HISPARSE_PROGRESS=1 → kLog (whole lines even
/// on a terminal: what tests read); otherwise kTerminal when stderr is a terminal, else kLog.
ProgressStyle progress_style_by_default();
/// progress_style_by_default() != kOff.
bool progress_wanted_by_default();

/// Seconds between two progress lines: $HISPARSE_PROGRESS_INTERVAL if set (>= 0; 0 = every update, for tests), else
/// 1 on a terminal (the line is rewritten in place) and 10 in a log (a line every 10 s: issue 40).
double progress_interval_seconds(ProgressStyle style = progress_style_by_default());

/// The rate limit and the writing of progress lines, whatever they say (ProgressReporter's, the sweep's, the
/// replay's). The clock and the sink are injectable so tests check the limit and the bytes without sleeping.
class ProgressPrinter {
 public:
  using Clock = std::function<double()>;                 // seconds, monotonic
  using Sink = std::function<void(const std::string&)>;  // bytes to write as they are ("\r", "\x1b[K", "\n" included)

  explicit ProgressPrinter(ProgressStyle style, Clock clock = {}, Sink sink = {}, double interval_seconds = -1);

  /// Seconds on the printer's clock since it was made.
  double elapsed() const { return clock_() - start_; }
  double now() const { return clock_(); }
  /// Whether show() would print now (the last line, or the start, is at least the interval old).
  bool due() const;
  /// Prints `line` if due(); returns whether it did.
  bool show(const std::string& line);
  /// The last line, once, when a line was printed before or `always` (a short run leaves the log or the terminal as
  /// it was); on a terminal it replaces the rewritten line and ends it with a newline.
  void finish(const std::string& line, bool always = false);
  /// On a terminal, erases the line being rewritten (if any), so that what the command prints next to the same
  /// terminal starts on a clean line; the next show() draws it again. Nothing in a log.
  void clear();
  bool printed_any() const { return printed_; }
  ProgressStyle style() const { return style_; }

 private:
  void write(const std::string& line, bool last);
  ProgressStyle style_;
  Clock clock_;
  Sink sink_;
  double interval_;
  double start_ = 0, last_print_ = 0;
  bool printed_ = false, finished_ = false, showing_ = false;
};

/// Rate-limited progress of `total` units of work (a ProgressPrinter with the standard line). Silent when disabled.
class ProgressReporter {
 public:
  using Clock = ProgressPrinter::Clock;
  using Sink = ProgressPrinter::Sink;

  ProgressReporter(std::string what, double total, ProgressStyle style, std::string unit = "", Clock clock = {},
                   Sink sink = {}, double interval_seconds = -1);
  /// `enabled` false: kOff; true: the default style (kOff only when HISPARSE_PROGRESS=0 asks for it).
  ProgressReporter(std::string what, double total, bool enabled, std::string unit = "")
      : ProgressReporter(std::move(what), total, enabled ? progress_style_by_default() : ProgressStyle::kOff,
                         std::move(unit)) {}

  /// `done` units are finished; prints when the last line is at least the interval old.
  void update(double done);
  /// The final line ("... done in m:ss"), once, when a progress line came before it.
  void finish();

  /// See ProgressPrinter::clear(): before a line of results on stdout.
  void clear() { printer_.clear(); }
  /// The line for `done` units at `now` (seconds on the reporter's clock).
  std::string line(double done, double now) const;
  bool enabled() const { return printer_.style() != ProgressStyle::kOff; }

 private:
  std::string what_, unit_;
  double total_;
  ProgressPrinter printer_;
  double start_ = 0, done_ = 0;
};

}  // namespace hisparse
