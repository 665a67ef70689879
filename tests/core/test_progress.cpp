// @brief Progress reporter: ETA from the rate so far, the m:ss format, the once-per-interval limit (a fake clock), a
// line every 10 s in a log, one line rewritten in place on a terminal; the work estimate under a machine's load.
#include <doctest/doctest.h>

#include <cstdlib>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/progress.h"
#include "core/work_estimate.h"

using namespace hisparse;

TEST_CASE("progress: ETA is the time left at the rate so far") {
  // 25 of 100 done in 10 s: 2.5 per s, 75 left, so 30 s.
  CHECK(progress_eta_seconds(25, 100, 10) == doctest::Approx(30.0));
  // Nothing done yet: no rate, unknown (negative). Everything done: nothing left.
  CHECK(progress_eta_seconds(0, 100, 10) < 0);
  CHECK(progress_eta_seconds(100, 100, 10) == 0.0);
  CHECK(progress_eta_seconds(120, 100, 10) == 0.0);
}

TEST_CASE("progress: times print as m:ss, h:mm:ss from an hour on, ? when unknown") {
  CHECK(format_progress_time(0) == "0:00");
  CHECK(format_progress_time(65.4) == "1:05");
  CHECK(format_progress_time(3599.6) == "1:00:00");
  CHECK(format_progress_time(3725) == "1:02:05");
  CHECK(format_progress_time(-1) == "?");
}

TEST_CASE("progress: at most one line per interval, a final line, nothing when disabled") {
  double now = 100;  // the fake clock, seconds
  std::vector<std::string> lines;
  ProgressReporter r("gen", 40, ProgressStyle::kLog, "steps", [&] { return now; }, [&](const std::string& l) { lines.push_back(l); }, 1.0);
  // 0.5 s in: too soon after the start, nothing printed.
  now = 100.5;
  r.update(5);
  CHECK(lines.empty());
  // 2 s in, 10 of 40 done: 5 per s, 30 left, ETA 6 s.
  now = 102;
  r.update(10);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "gen: 10/40 steps (25 %), elapsed 0:02, ETA 0:06\n");
  // 0.9 s after that line: still rate-limited, however many updates come.
  now = 102.9;
  for (int i = 11; i < 30; ++i) r.update(i);
  CHECK(lines.size() == 1);
  now = 103.0;
  r.update(30);
  CHECK(lines.size() == 2);
  // finish prints once, with the total time.
  now = 104;
  r.update(40);
  r.finish();
  r.finish();
  REQUIRE(lines.size() == 4);
  CHECK(lines[3] == "gen: 40/40 steps done in 0:04\n");

  std::vector<std::string> none;
  ProgressReporter off("gen", 40, ProgressStyle::kOff, "", [&] { return now; }, [&](const std::string& l) { none.push_back(l); }, 1.0);
  now = 200;
  off.update(20);
  off.finish();
  CHECK(none.empty());
}

TEST_CASE("progress: fractional amounts (simulated seconds) keep one decimal") {
  double now = 0;
  std::vector<std::string> lines;
  ProgressReporter r("simulate", 120.0, ProgressStyle::kLog, "s simulated", [&] { return now; },
                     [&](const std::string& l) { lines.push_back(l); }, 1.0);
  now = 4;
  r.update(30.5);
  REQUIRE(lines.size() == 1);
  // 30.5 of 120 in 4 s: 89.5 left at 7.625 per s = 11.74 s, printed 0:12.
  CHECK(lines[0] == "simulate: 30.5/120 s simulated (25 %), elapsed 0:04, ETA 0:12\n");
}

TEST_CASE("progress: in a log a line every 10 s by default, and a run shorter than that leaves the log as it was") {
  // The interval when the environment does not set one: 10 s in a log (issue 40: a 100 s simulate wrote nothing to
  // its log), 1 s on a terminal, where the line is rewritten rather than added.
  ::unsetenv("HISPARSE_PROGRESS_INTERVAL");
  CHECK(progress_interval_seconds(ProgressStyle::kLog) == 10.0);
  CHECK(progress_interval_seconds(ProgressStyle::kTerminal) == 1.0);

  double now = 0;
  std::string log;
  ProgressReporter r("simulate", 100, ProgressStyle::kLog, "requests", [&] { return now; },
                     [&](const std::string& bytes) { log += bytes; });
  // 9.9 s in: nothing yet, however much is done.
  now = 9.9;
  r.update(50);
  CHECK(log.empty());
  // 10 s in, 50 of 100: a whole line with its newline; 19.9 s: still the one line; 20 s: the second.
  now = 10;
  r.update(50);
  CHECK(log == "simulate: 50/100 requests (50 %), elapsed 0:10, ETA 0:10\n");
  now = 19.9;
  r.update(80);
  now = 20;
  r.update(90);
  CHECK(log.find("simulate: 90/100 requests (90 %), elapsed 0:20, ETA 0:02\n") != std::string::npos);
  now = 21;
  r.update(100);
  r.finish();
  CHECK(log.substr(log.rfind("simulate:")) == "simulate: 100/100 requests done in 0:21\n");

  // A run that ends before its first line prints nothing at all, not even the final line.
  std::string quiet;
  now = 0;
  ProgressReporter brief("trace gen", 10, ProgressStyle::kLog, "", [&] { return now; },
                         [&](const std::string& bytes) { quiet += bytes; });
  now = 3;
  brief.update(10);
  brief.finish();
  CHECK(quiet.empty());
}

TEST_CASE("progress: on a terminal one line is rewritten in place and ended by the final line") {
  double now = 0;
  std::string tty;
  ProgressReporter r("sweep", 4, ProgressStyle::kTerminal, "items", [&] { return now; },
                     [&](const std::string& bytes) { tty += bytes; }, 1.0);
  now = 1;
  r.update(1);
  now = 2;
  r.update(2);
  now = 4;
  r.update(4);
  r.finish();
  // Each update returns to the line's start and erases what a longer line left; no newline until the end.
  CHECK(tty ==
        "\rsweep: 1/4 items (25 %), elapsed 0:01, ETA 0:03\x1b[K"
        "\rsweep: 2/4 items (50 %), elapsed 0:02, ETA 0:02\x1b[K"
        "\rsweep: 4/4 items (100 %), elapsed 0:04, ETA 0:00\x1b[K"
        "\rsweep: 4/4 items done in 0:04\x1b[K\n");

  // Before a command prints results to the same terminal, clear() erases the line being rewritten (once), so the
  // results start on a clean line; after the final line there is nothing to erase.
  std::string term;
  now = 0;
  ProgressReporter s("simulate", 4, ProgressStyle::kTerminal, "", [&] { return now; },
                     [&](const std::string& bytes) { term += bytes; }, 1.0);
  s.clear();
  CHECK(term.empty());
  now = 1;
  s.update(1);
  s.clear();
  s.clear();
  CHECK(term == "\rsimulate: 1/4 (25 %), elapsed 0:01, ETA 0:03\x1b[K\r\x1b[K");
}

TEST_CASE("progress: the printer's final line can be asked for always (a command's summary line)") {
  double now = 0;
  std::string log;
  ProgressPrinter p(ProgressStyle::kLog, [&] { return now; }, [&](const std::string& bytes) { log += bytes; }, 10);
  now = 1;
  CHECK(!p.due());
  CHECK(!p.show("ignored"));
  p.finish("replay: 2/2 requests", /*always=*/true);
  p.finish("twice");
  CHECK(log == "replay: 2/2 requests\n");
}

TEST_CASE("work estimate: a busy machine's load is named with the time it may take, the estimate itself unchanged") {
  const WorkEstimate e{"sweep", "210 work items", 16.0, "rates measured", ""};
  // Load 15.4 on 2 cores: up to 7.7 times the free-core estimate, 123 s; the estimate (and so any refusal) stays 16 s.
  const WorkEstimate busy = under_load(e, 15.4, 2);
  CHECK(busy.seconds == 16.0);
  CHECK(busy.basis ==
        "rates measured; with the cores free: this machine's load average of 15.4 on 2 cores may stretch it up to × "
        "7.7, about 2:03");
  // A load the cores absorb, or none known, adds nothing.
  CHECK(under_load(e, 1.5, 2).basis == "rates measured");
  CHECK(under_load(e, 3.0, 0).basis == "rates measured");
  CHECK(format_work_estimate(busy).rfind("sweep: estimated 210 work items, about 0:16 (rates measured; with the cores "
                                         "free: ",
                                         0) == 0);
}

TEST_CASE("work estimate: over an hour, or with a problem, it is refused naming the estimate and --force; forced, it runs") {
  // 2 hours: over the hour a command runs without --force.
  const WorkEstimate long_one{"simulate", "8,000,000 requests", 7200.0, "rate measured", ""};
  std::string message;
  try {
    check_work_estimate(long_one, /*force=*/false, /*quiet=*/true);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.rfind("simulate: estimated 8,000,000 requests, about 2:00:00 (rate measured", 0) == 0);
  CHECK(message.find("(rate measured") != std::string::npos);
  CHECK(message.find("Refused: more than the 1:00:00 a command runs without --force; reduce the size, or pass --force "
                     "to run it anyway") != std::string::npos);
  // A problem other than time (the disk) is named on its own.
  const WorkEstimate no_room{"trace gen", "a file of 5 bytes", 1.0, "rate measured", "/tmp has 4 bytes free"};
  message.clear();
  try {
    check_work_estimate(no_room, false, true);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find("Refused: /tmp has 4 bytes free; reduce the size, or pass --force") != std::string::npos);
  // --force: no refusal, whichever the reason.
  CHECK_NOTHROW(check_work_estimate(long_one, true, true));
  CHECK_NOTHROW(check_work_estimate(no_room, true, true));
  // Short work without a problem is never refused.
  CHECK_NOTHROW(check_work_estimate({"trace gen", "24 step records", 0.01, "rate measured", ""}, false, true));
}
