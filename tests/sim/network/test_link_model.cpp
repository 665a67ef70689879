// @brief Link models against closed-form expectations: latency + bytes/bandwidth, fair sharing, bottlenecks.
#include <doctest/doctest.h>

#include <vector>

#include "core/error.h"
#include "sim/network/link_model.h"
#include "sim/network/maxmin_solver.h"
#include "sim/network/network_resource.h"
#include "sim/engine/simulator.h"

using namespace hisparse::sim;

namespace {

struct Recorder : FlowListener {
  std::vector<std::pair<int64_t, SimTime>> done;  // (cookie, end)
  void on_flow_done(Simulator& sim, int64_t cookie, const FlowDone& d) override {
    CHECK(sim.now() == d.end);
    done.emplace_back(cookie, d.end);
  }
};

struct Starter : EventHandler {
  NetworkResource* net = nullptr;
  FlowListener* listener = nullptr;
  FlowSpec spec;
  void on_event(Simulator&, const Event& e) override { net->start(spec, listener, e.arg); }
};

}  // namespace

TEST_CASE("a lone transfer takes latency + bytes / bandwidth") {
  for (const char* type : {"maxmin", "constant"}) {
    Simulator sim;
    NetworkResource net(sim, make_link_model(type));
    const int32_t link = net.model().add_link("pcie", 50e9);
    Recorder rec;
    FlowSpec f;
    f.bytes = 1e9;
    f.latency = 2000;
    f.add_link(link);
    net.start(f, &rec, 7);
    sim.run();
    // Expected: 2 µs latency + 1e9 B / 50e9 B/s = 2,000 + 20,000,000 ns.
    REQUIRE(rec.done.size() == 1);
    CHECK(rec.done[0].first == 7);
    CHECK(rec.done[0].second == 2000 + 20'000'000);
    CHECK(net.model().carried_bytes(link) == doctest::Approx(1e9));
  }
}

TEST_CASE("two equal transfers on one link take twice as long as one") {
  Simulator sim;
  NetworkResource net(sim, make_shared_link_model());
  const int32_t link = net.model().add_link("pcie", 50e9);
  Recorder rec;
  FlowSpec f;
  f.bytes = 1e9;
  f.add_link(link);
  net.start(f, &rec, 0);
  net.start(f, &rec, 1);
  sim.run();
  // Expected: each gets 25e9 B/s, so both end at 1e9 / 25e9 s = 40 ms (twice the lone 20 ms).
  REQUIRE(rec.done.size() == 2);
  CHECK(rec.done[0].second == 40'000'000);
  CHECK(rec.done[1].second == 40'000'000);
  CHECK(rec.done[0].first == 0);  // equal finish: lower flow id first
}

TEST_CASE("the constant-rate baseline ignores contention") {
  Simulator sim;
  NetworkResource net(sim, make_constant_rate_link_model());
  const int32_t link = net.model().add_link("pcie", 50e9);
  Recorder rec;
  FlowSpec f;
  f.bytes = 1e9;
  f.add_link(link);
  net.start(f, &rec, 0);
  net.start(f, &rec, 1);
  sim.run();
  // Expected: each runs alone at 50e9 B/s: 20 ms, the gap the shared model exists to capture.
  REQUIRE(rec.done.size() == 2);
  CHECK(rec.done[0].second == 20'000'000);
  CHECK(rec.done[1].second == 20'000'000);
}

TEST_CASE("a late second flow shares the remaining bytes fairly") {
  Simulator sim;
  NetworkResource net(sim, make_shared_link_model());
  const int32_t link = net.model().add_link("pcie", 50e9);
  Recorder rec;
  Starter starter;
  starter.net = &net;
  starter.listener = &rec;
  starter.spec.bytes = 1e9;
  starter.spec.add_link(link);
  const uint32_t h = sim.add_handler(&starter);
  sim.schedule(0, h, 0, 0);
  sim.schedule(10'000'000, h, 0, 1);
  sim.run();
  // Expected: flow 0 alone for 10 ms moves 0.5e9 B; then 25e9 B/s each: flow 0 needs 20 ms more (ends 30 ms),
  // flow 1 has moved 0.5e9 B by then and finishes its last 0.5e9 B alone in 10 ms (ends 40 ms).
  REQUIRE(rec.done.size() == 2);
  CHECK(rec.done[0] == std::make_pair(int64_t{0}, SimTime{30'000'000}));
  CHECK(rec.done[1] == std::make_pair(int64_t{1}, SimTime{40'000'000}));
}

TEST_CASE("a host DRAM bottleneck caps 8 PCIe links") {
  Simulator sim;
  NetworkResource net(sim, make_shared_link_model());
  LinkModel& m = net.model();
  const int32_t dram = m.add_link("dram", 200e9);
  Recorder rec;
  for (int g = 0; g < 8; ++g) {
    FlowSpec f;
    f.bytes = 1e9;
    f.add_link(m.add_link("pcie" + std::to_string(g), 55.3e9));
    f.add_link(dram);
    net.start(f, &rec, g);
  }
  sim.run();
  // Expected: 8 × 55.3 = 442.4 GB/s wanted, 200 GB/s available: 25 GB/s each, 1e9 / 25e9 s = 40 ms for all,
  // aggregate exactly the DRAM rate (8e9 B in 40 ms = 200 GB/s) instead of 8 × 18.08 ms links alone.
  REQUIRE(rec.done.size() == 8);
  for (const auto& d : rec.done) CHECK(d.second == 40'000'000);
  CHECK(m.carried_bytes(dram) == doctest::Approx(8e9));
}

TEST_CASE("max-min: a flow capped below its share leaves the rest to the others") {
  // Link of 100 carries A (cap 10), B and C (no cap); D crosses link 1 (cap 30) alone.
  // Expected: A = 10 (own cap), B = C = 45 (the 90 left), D = 30 (its link).
  const std::vector<double> cap = {100, 30};
  const int32_t l0[] = {0}, l1[] = {1};
  std::vector<MaxMinFlow> flows = {{l0, 1, 10}, {l0, 1, 0}, {l0, 1, 0}, {l1, 1, 0}};
  std::vector<double> rates;
  solve_max_min(cap, flows, rates);
  CHECK(rates[0] == doctest::Approx(10));
  CHECK(rates[1] == doctest::Approx(45));
  CHECK(rates[2] == doctest::Approx(45));
  CHECK(rates[3] == doctest::Approx(30));
}

TEST_CASE("max-min: a flow over two links takes the tighter share") {
  // Links 0 (cap 60) and 1 (cap 100). X crosses both, Y only link 0, Z only link 1.
  // Link 0 saturates first at 30 each (X, Y); Z then takes the 70 left on link 1.
  const std::vector<double> cap = {60, 100};
  const int32_t both[] = {0, 1}, only0[] = {0}, only1[] = {1};
  std::vector<MaxMinFlow> flows = {{both, 2, 0}, {only0, 1, 0}, {only1, 1, 0}};
  std::vector<double> rates;
  solve_max_min(cap, flows, rates);
  CHECK(rates[0] == doctest::Approx(30));
  CHECK(rates[1] == doctest::Approx(30));
  CHECK(rates[2] == doctest::Approx(70));
}

TEST_CASE("bad flows and links are rejected") {
  auto m = make_shared_link_model();
  CHECK_THROWS_WITH_AS(m->add_link("x", 0), doctest::Contains("capacity must be > 0"), hisparse::Error);
  FlowSpec f;
  f.bytes = 1;
  CHECK_THROWS_WITH_AS(m->start(0, f), doctest::Contains("never finish"), hisparse::Error);
  f.add_link(3);
  CHECK_THROWS_WITH_AS(m->start(0, f), doctest::Contains("unknown link index 3"), hisparse::Error);
  CHECK_THROWS_WITH_AS(make_link_model("fancy"), doctest::Contains("expected maxmin or constant"), hisparse::Error);
}
