// @brief The event loop: (time, sequence) order, the clock never goes back, past events are refused.
#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "sim/engine/simulator.h"

using namespace hisparse::sim;

namespace {
struct Log : EventHandler {
  std::vector<std::pair<SimTime, int64_t>> seen;
  void on_event(Simulator& sim, const Event& e) override {
    seen.emplace_back(sim.now(), e.arg);
    if (e.kind == 1) sim.schedule(sim.now(), 0, 0, 100 + e.arg);  // same-time event scheduled from a handler
  }
};
}  // namespace

TEST_CASE("events fire by time, then by scheduling order") {
  Simulator sim;
  Log log;
  REQUIRE(sim.add_handler(&log) == 0);
  sim.schedule(20, 0, 0, 1);
  sim.schedule(10, 0, 1, 2);
  sim.schedule(10, 0, 0, 3);
  sim.schedule(20, 0, 0, 4);
  CHECK(sim.run() == 5);
  // Expected: t=10: 2 (kind 1, schedules 102 at t=10, behind 3), 3, 102; t=20: 1, 4.
  const std::vector<std::pair<SimTime, int64_t>> want = {{10, 2}, {10, 3}, {10, 102}, {20, 1}, {20, 4}};
  CHECK(log.seen == want);
  CHECK(sim.now() == 20);
}

TEST_CASE("run(until) stops before later events and moves the clock to until") {
  Simulator sim;
  Log log;
  sim.add_handler(&log);
  sim.schedule(5, 0, 0, 1);
  sim.schedule(50, 0, 0, 2);
  CHECK(sim.run(30) == 1);
  CHECK(sim.now() == 30);
  CHECK(sim.pending() == 1);
  CHECK_THROWS_WITH_AS(sim.schedule(29, 0, 0, 0), doctest::Contains("in the past"), hisparse::Error);
  CHECK(sim.run() == 1);
  CHECK(sim.now() == 50);
}
