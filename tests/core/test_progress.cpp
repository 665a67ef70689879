// @brief Progress reporter: ETA from the rate so far, the m:ss format, the once-per-interval limit (a fake clock).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/progress.h"

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
  ProgressReporter r("gen", 40, true, "steps", [&] { return now; }, [&](const std::string& l) { lines.push_back(l); }, 1.0);
  // 0.5 s in: too soon after the start, nothing printed.
  now = 100.5;
  r.update(5);
  CHECK(lines.empty());
  // 2 s in, 10 of 40 done: 5 per s, 30 left, ETA 6 s.
  now = 102;
  r.update(10);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "gen: 10/40 steps (25 %), elapsed 0:02, ETA 0:06");
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
  CHECK(lines[3] == "gen: 40/40 steps done in 0:04");

  std::vector<std::string> none;
  ProgressReporter off("gen", 40, false, "", [&] { return now; }, [&](const std::string& l) { none.push_back(l); }, 1.0);
  now = 200;
  off.update(20);
  off.finish();
  CHECK(none.empty());
}

TEST_CASE("progress: fractional amounts (simulated seconds) keep one decimal") {
  double now = 0;
  std::vector<std::string> lines;
  ProgressReporter r("simulate", 120.0, true, "s simulated", [&] { return now; },
                     [&](const std::string& l) { lines.push_back(l); }, 1.0);
  now = 4;
  r.update(30.5);
  REQUIRE(lines.size() == 1);
  // 30.5 of 120 in 4 s: 89.5 left at 7.625 per s = 11.74 s, printed 0:12.
  CHECK(lines[0] == "simulate: 30.5/120 s simulated (25 %), elapsed 0:04, ETA 0:12");
}
