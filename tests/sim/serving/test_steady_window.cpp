// @brief The steady window of a closed-loop run: the steps while every client had a request in flight, tokens over
// the window's span, and nothing for an open-loop run.
#include <doctest/doctest.h>

#include "sim/serving/steady_window.h"

using namespace hisparse::sim;

namespace {

StepRow step(SimTime start_ms, SimTime end_ms, int32_t requests, int32_t in_flight) {
  StepRow s;
  s.start = start_ms * 1000000;
  s.end = end_ms * 1000000;
  s.requests = requests;
  s.in_flight = in_flight;
  return s;
}

}  // namespace

TEST_CASE("steady window: only the steps while every client is in flight count, over their span") {
  ServingResult r;
  r.clients = 4;
  r.ranks = 2;
  r.decode_instances = 1;
  r.decode_tokens = r.request_steps = 100;  // one token per request-step (no MTP)
  // Two steps with all 4 clients in flight (4 and 2 requests decoding, 0–10 ms and 12–20 ms), then the ramp-down.
  r.steps = {step(0, 10, 4, 4), step(12, 20, 2, 4), step(20, 30, 3, 3), step(30, 40, 1, 1)};
  const SteadyWindow w = steady_window(r);
  // Expected: 6 request-steps over 20 ms (the idle 2 ms between them included) = 300 tokens/s; mean batch 6 / 2 steps
  // / 2 ranks = 1.5 per rank.
  REQUIRE(w.found());
  CHECK(w.steps == 2);
  CHECK(w.tokens_per_s == doctest::Approx(300.0));
  CHECK(w.batch_per_rank == doctest::Approx(1.5));
  CHECK(w.seconds == doctest::Approx(0.020));
  // With MTP's accepted tokens (1.5 per request-step over the run), the tokens scale with it.
  r.decode_tokens = 150;
  CHECK(steady_window(r).tokens_per_s == doctest::Approx(450.0));
  // Open loop (no clients): no window.
  r.clients = 0;
  CHECK_FALSE(steady_window(r).found());
}
