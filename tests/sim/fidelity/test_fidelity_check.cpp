// @brief The status and --check logic (sim/fidelity/field_evaluation.h): a point worse than its recorded error (or
// without one) fails, one within it passes, within-band is |error| <= tolerance; the range error is 0 inside and
// relative to the nearer bound outside.
#include <doctest/doctest.h>

#include "sim/fidelity/field_evaluation.h"

using namespace hisparse::sim;

namespace {

FieldPoint recorded(double rec, double tol = 15) {
  FieldPoint p;
  p.id = "p";
  p.published = 10;
  p.tolerance_pct = tol;
  p.recorded_error_pct = rec;
  return p;
}

RunResult run_with(const FieldPoint& p, double error) {
  RunResult r;
  r.run.name = "run";
  PointResult pr;
  pr.point = p;
  pr.error_pct = error;
  pr.band = p.tolerance_pct;
  pr.status = field_status(p, error, p.tolerance_pct);
  r.points.push_back(pr);
  return r;
}

}  // namespace

TEST_CASE("worse than recorded fails the check, within it passes") {
  // Recorded −41.7: −42.1 is within the 0.5-point slack, −42.3 is not; an improvement to −10 is within the band.
  CHECK(field_status(recorded(-41.7), -42.1, recorded(-41.7).tolerance_pct) == PointStatus::kOk);
  CHECK(field_status(recorded(-41.7), -42.3, recorded(-41.7).tolerance_pct) == PointStatus::kWorseThanRecorded);
  CHECK(field_status(recorded(-41.7), +42.3, recorded(-41.7).tolerance_pct) == PointStatus::kWorseThanRecorded);
  CHECK(field_status(recorded(-41.7), -10, recorded(-41.7).tolerance_pct) == PointStatus::kWithinBand);
  CHECK(field_status(recorded(3), 3.4, recorded(3).tolerance_pct) == PointStatus::kWithinBand);
  CHECK(check_failures({run_with(recorded(-41.7), -42.1)}).empty());
  const auto fails = check_failures({run_with(recorded(-41.7), -42.3)});
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].find("run/p: error -42.3 %") != std::string::npos);
  // No recorded error: the check fails it and says how to record one.
  FieldPoint none = recorded(0);
  none.recorded_error_pct.reset();
  CHECK(field_status(none, 1, none.tolerance_pct) == PointStatus::kWorseThanRecorded);
  const auto unrecorded = check_failures({run_with(none, 1)});
  REQUIRE(unrecorded.size() == 1);
  CHECK(unrecorded[0].find("no recorded error") != std::string::npos);
  // Within band counts |error| <= tolerance, whatever the record says.
  CHECK(count_within_band({run_with(recorded(-41.7), -14.9), run_with(recorded(0), 16)}) == std::make_pair(1, 2));
}

TEST_CASE("the error against a published range is 0 inside and relative to the nearer bound outside") {
  FieldPoint p;
  p.published_range = std::make_pair(2.0, 3.0);
  CHECK(field_error_pct(p, 2.5) == 0);
  CHECK(field_error_pct(p, 1.5) == doctest::Approx(-25));
  CHECK(field_error_pct(p, 3.3) == doctest::Approx(10));
  FieldPoint q;
  q.published = 19.85;
  CHECK(field_error_pct(q, 11.58) == doctest::Approx((11.58 - 19.85) / 19.85 * 100));
}
