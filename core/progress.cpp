// @brief Progress reporter: ETA from the rate so far, printed at most once per interval (rewritten in place on a
// terminal, a new line in a log), then a final line.
#include "core/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse {

double progress_eta_seconds(double done, double total, double elapsed_seconds) {
  if (done <= 0 || elapsed_seconds < 0) return -1;
  if (done >= total) return 0;
  return elapsed_seconds / done * (total - done);
}

std::string format_progress_time(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

ProgressStyle progress_style_by_default() {
  if (const char* env = std::getenv("HISPARSE_PROGRESS"); env && *env)
    return std::strcmp(env, "0") == 0 ? ProgressStyle::kOff : ProgressStyle::kLog;
  return ::isatty(STDERR_FILENO) == 1 ? ProgressStyle::kTerminal : ProgressStyle::kLog;
}

bool progress_wanted_by_default() { return progress_style_by_default() != ProgressStyle::kOff; }

double progress_interval_seconds(ProgressStyle style) {
  const char* env = std::getenv("HISPARSE_PROGRESS_INTERVAL");
  // A terminal's line costs nothing to rewrite; a log keeps every line, so one per 10 s.
  if (!env || !*env) return style == ProgressStyle::kTerminal ? 1.0 : 10.0;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (*end != '\0' || !(v >= 0) || !std::isfinite(v))
    throw_error("HISPARSE_PROGRESS_INTERVAL '{}': expected seconds between progress lines, a number >= 0", env);
  return v;
}

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string amount(double v) {
  // Counts print as integers; simulated seconds and the like keep one decimal.
  return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{}", static_cast<int64_t>(v))
                                                   : fmt::format("{:.1f}", v);
}

}  // namespace

ProgressPrinter::ProgressPrinter(ProgressStyle style, Clock clock, Sink sink, double interval_seconds)
    : style_(style),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      sink_(sink ? std::move(sink) : Sink([](const std::string& bytes) {
        std::fputs(bytes.c_str(), stderr);
        std::fflush(stderr);
      })),
      interval_(style == ProgressStyle::kOff ? 0
                : interval_seconds >= 0      ? interval_seconds
                                             : progress_interval_seconds(style)) {
  start_ = last_print_ = clock_();
}

bool ProgressPrinter::due() const {
  return style_ != ProgressStyle::kOff && !finished_ && clock_() - last_print_ >= interval_;
}

void ProgressPrinter::write(const std::string& line, bool last) {
  if (style_ == ProgressStyle::kTerminal)
    sink_("\r" + line + "\x1b[K" + (last ? "\n" : ""));  // erase what a longer earlier line left
  else
    sink_(line + "\n");
  printed_ = true;
  showing_ = style_ == ProgressStyle::kTerminal && !last;
}

void ProgressPrinter::clear() {
  if (!showing_) return;
  sink_("\r\x1b[K");
  showing_ = false;
}

bool ProgressPrinter::show(const std::string& line) {
  if (!due()) return false;
  last_print_ = clock_();
  write(line, false);
  return true;
}

void ProgressPrinter::finish(const std::string& line, bool always) {
  if (style_ == ProgressStyle::kOff || finished_) return;
  finished_ = true;
  if (printed_ || always) write(line, true);
}

ProgressReporter::ProgressReporter(std::string what, double total, ProgressStyle style, std::string unit, Clock clock,
                                   Sink sink, double interval_seconds)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      printer_(style, std::move(clock), std::move(sink), interval_seconds) {
  start_ = printer_.now();
}

std::string ProgressReporter::line(double done, double now) const {
  const double elapsed = now - start_;
  const double pct = total_ > 0 ? 100.0 * done / total_ : 100.0;
  return fmt::format("{}: {}/{}{} ({:.0f} %), elapsed {}, ETA {}", what_, amount(done), amount(total_),
                     unit_.empty() ? "" : " " + unit_, pct, format_progress_time(elapsed),
                     format_progress_time(progress_eta_seconds(done, total_, elapsed)));
}

void ProgressReporter::update(double done) {
  done_ = done;
  if (printer_.due()) printer_.show(line(done, printer_.now()));
}

void ProgressReporter::finish() {
  printer_.finish(fmt::format("{}: {}/{}{} done in {}", what_, amount(done_), amount(total_),
                              unit_.empty() ? "" : " " + unit_, format_progress_time(printer_.elapsed())));
}

}  // namespace hisparse
