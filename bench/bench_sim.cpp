// @brief Simulator speed: raw event throughput (target ≥ 5 M events/s on one core), shared-link flow churn,
// and one simulated hour of the 8 × H200 decode node serving the Mooncake conversation trace (target ≤ 60 s).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "core/scenario_loader.h"
#include "sim/network/network_resource.h"
#include "sim/serving/serving_simulation.h"
#include "sim/engine/simulator.h"
#include "sim/workload/workload.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

// Each event schedules its successor a pseudo-random delay ahead, keeping `pending` events in the heap.
struct Ticker : EventHandler {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  uint64_t left = 0;
  void on_event(Simulator& sim, const Event& e) override {
    if (left == 0) return;
    --left;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    sim.schedule(sim.now() + 1 + static_cast<SimTime>((state >> 33) % 100000), e.handler, e.kind, e.arg);
  }
};

void BM_EventLoop(benchmark::State& st) {
  const int64_t pending = st.range(0);
  const uint64_t events = 4'000'000;
  for (auto _ : st) {
    Simulator sim;
    Ticker t;
    t.left = events;
    const uint32_t h = sim.add_handler(&t);
    for (int64_t i = 0; i < pending; ++i) sim.schedule(i, h, 0, i);
    const uint64_t n = sim.run();
    benchmark::DoNotOptimize(n);
    st.SetItemsProcessed(st.items_processed() + static_cast<int64_t>(n));
  }
  st.counters["events_per_s"] = benchmark::Counter(static_cast<double>(st.items_processed()), benchmark::Counter::kIsRate);
}
// Rates are per CPU second of this thread (not wall time), so a shared machine does not understate one core.
BENCHMARK(BM_EventLoop)->Arg(16)->Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond);

// 8 PCIe links behind one host DRAM link; every finished flow starts a new one on the same GPU.
struct Churn : FlowListener {
  NetworkResource* net = nullptr;
  std::vector<FlowSpec> specs;
  int64_t left = 0;
  void on_flow_done(Simulator&, int64_t cookie, const FlowDone&) override {
    if (left-- > 0) net->start(specs[static_cast<size_t>(cookie)], this, cookie);
  }
};

void BM_SharedLinkChurn(benchmark::State& st) {
  int64_t flows = 0;
  double events = 0;
  for (auto _ : st) {
    Simulator sim;
    NetworkResource net(sim, make_shared_link_model());
    const int32_t dram = net.model().add_link("dram", 200e9);
    Churn c;
    c.net = &net;
    c.left = 200'000;
    for (int g = 0; g < 8; ++g) {
      FlowSpec f;
      f.bytes = 1e6 * (g + 1);
      f.latency = 2000;
      f.add_link(net.model().add_link("pcie" + std::to_string(g), 55.3e9));
      f.add_link(dram);
      c.specs.push_back(f);
    }
    for (int g = 0; g < 8; ++g) net.start(c.specs[static_cast<size_t>(g)], &c, g);
    sim.run();
    flows += 200'000 + 8;
    events += static_cast<double>(sim.events_processed());
  }
  st.SetItemsProcessed(flows);
  st.counters["events_per_s"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SharedLinkChurn)->Unit(benchmark::kMillisecond);

void BM_MooncakeHour(benchmark::State& st) {
  const KvMode mode = st.range(0) ? KvMode::kHiSparse : KvMode::kFull;
  Workload w;
  try {
    w = load_workload("mooncake_conversation");
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  const Scenario sc = load_scenario("dsv32-8xh200-1tb");
  ServingOptions opt;
  opt.mode = mode;
  for (auto _ : st) {
    const ServingResult r = run_serving(sc, w, opt);
    st.counters["sim_seconds"] = ns_to_seconds(r.makespan);
    st.counters["events"] = static_cast<double>(r.events);
    st.counters["events_per_s"] = benchmark::Counter(static_cast<double>(r.events), benchmark::Counter::kIsRate);
    st.counters["decode_steps"] = static_cast<double>(r.steps.size());
  }
}
BENCHMARK(BM_MooncakeHour)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
