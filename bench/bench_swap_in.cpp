// @brief Throughput of the swap-in hot path (selected entries per second): sglang-lru at K = 2048, H = 4096,
// 85% adjacent-step overlap, on one thread and on two threads with independent (request, layer) states; plus
// the comparison policies at the same point.
//
//   build/<dir>/bench/bench_swap_in --benchmark_filter=sglang-lru/ --benchmark_repetitions=3
// Every thread replays the same 512 recorded steps into its own state (the trace is shared read-only).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in.h"

namespace {

using namespace hisparse;
using namespace hisparse::cpu_ref;

constexpr int32_t kTopK = 2048;
constexpr int32_t kBuffer = 4096;
constexpr int32_t kSteps = 512;
constexpr int32_t kFirstN = 32768;

/// One layer's synthetic selections: each step keeps ~85% of the previous one (drops are uniform) and adds new
/// positions, half from a recent window and half uniform over the context, plus the newest token.
struct Trace {
  std::vector<std::vector<int32_t>> steps;
  std::vector<int32_t> ns;
};

const Trace& trace() {
  static const Trace t = [] {
    Trace tr;
    std::mt19937_64 rng(20240601);
    std::vector<int32_t> cur;
    std::vector<uint32_t> in_set(kFirstN + kSteps, 0);
    uint32_t gen = 0;
    for (int32_t j = 0; j < kSteps; ++j) {
      const int32_t n = kFirstN + j;
      ++gen;
      std::vector<int32_t> next;
      for (int32_t p : cur) {
        if (rng() % 100 < 85 && p != n - 2) {
          next.push_back(p);
          in_set[p] = gen;
        }
      }
      if (in_set[n - 1] != gen) {
        next.push_back(n - 1);
        in_set[n - 1] = gen;
      }
      while (static_cast<int32_t>(next.size()) < kTopK) {
        const int32_t p = rng() % 2 ? n - 1 - static_cast<int32_t>(rng() % 8192) : static_cast<int32_t>(rng() % n);
        if (in_set[p] == gen) continue;
        in_set[p] = gen;
        next.push_back(p);
      }
      tr.steps.push_back(next);
      tr.ns.push_back(n);
      cur = next;
    }
    return tr;
  }();
  return t;
}

void BM_sglang_lru(benchmark::State& state) {
  const Trace& tr = trace();
  std::vector<int32_t> slot_token(kBuffer), lru(kBuffer);
  SwapInStateView view{slot_token.data(), lru.data(), kBuffer};
  SwapInScratch scratch;
  SwapInPlan plan;
  plan.slot_of.reserve(kTopK);
  int64_t entries = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    init_swap_in_state(view, InitialState::kIdentity);
    for (int32_t j = 0; j < kSteps; ++j) {
      swap_in(view, tr.steps[j].data(), kTopK, tr.ns[j], kTopK, nullptr, 1152, {0, 0, j}, plan, scratch);
      entries += plan.counters.selected;
      misses += plan.counters.misses;
    }
    benchmark::DoNotOptimize(plan.slot_of.data());
  }
  state.SetItemsProcessed(entries);
  state.counters["miss_rate"] =
      benchmark::Counter(static_cast<double>(misses) / static_cast<double>(entries), benchmark::Counter::kAvgThreads);
}
// One thread: items/s over the thread's CPU time (robust on a shared machine). Two threads: over wall time, so
// the figure is the aggregate throughput of two independent (request, layer) states and shows the scaling.
BENCHMARK(BM_sglang_lru)->Name("sglang-lru/K2048/H4096/overlap85/cpu_time")->Threads(1);
BENCHMARK(BM_sglang_lru)->Name("sglang-lru/K2048/H4096/overlap85")->Threads(1)->Threads(2)->UseRealTime();

void BM_policy(benchmark::State& state, const char* name) {
  const Trace& tr = trace();
  auto policy = make_policy(name);
  std::shared_ptr<const LayerFuture> future;
  if (policy->needs_future()) {
    std::vector<const int32_t*> sel;
    std::vector<int32_t> counts;
    for (const auto& s : tr.steps) {
      sel.push_back(s.data());
      counts.push_back(kTopK);
    }
    future = std::make_shared<const LayerFuture>(build_layer_future(sel, counts, tr.ns, kBuffer));
  }
  SwapInScratch scratch;
  SwapInPlan plan;
  int64_t entries = 0;
  int64_t misses = 0;
  for (auto _ : state) {
    policy->reset(kBuffer, InitialState::kIdentity);
    if (future) policy->set_future(future);
    for (int32_t j = 0; j < kSteps; ++j) {
      StepInput in{tr.steps[j].data(), kTopK, tr.ns[j], kTopK, nullptr, 1152};
      policy->step(in, {0, 0, j}, plan, scratch);
      entries += plan.counters.selected;
      misses += plan.counters.misses;
    }
  }
  state.SetItemsProcessed(entries);
  state.counters["miss_rate"] =
      benchmark::Counter(static_cast<double>(misses) / static_cast<double>(entries), benchmark::Counter::kAvgThreads);
}
BENCHMARK_CAPTURE(BM_policy, sglang_lru, "sglang-lru");
BENCHMARK_CAPTURE(BM_policy, belady, "belady");
BENCHMARK_CAPTURE(BM_policy, topk_only, "topk-only");
BENCHMARK_CAPTURE(BM_policy, fifo, "fifo");
BENCHMARK_CAPTURE(BM_policy, lfu, "lfu");
BENCHMARK_CAPTURE(BM_policy, clock, "clock");

}  // namespace

BENCHMARK_MAIN();
