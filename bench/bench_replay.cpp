// @brief The whole `hisparse replay` command on the issue-16 trace shape (1 request, 61 layers, 100 steps, K 2048,
// 32K context, `.npy` directory, H 4096, sglang-lru), as a user runs it: the CLI binary started per iteration (process
// start, trace decoding and validation, replay, statistics, table), 1 and 2 threads; then the same in process, with the
// counting sglang-lru and with the reference policy object, and a sweep of five buffer sizes in one pass.
// items_per_second = selected entries x configurations per second of wall time; cpu_ms and M_entries_per_cpu_s: the
// same per CPU second of the child processes (robust where other work shares the cores).
//
//   build/h16/bench/bench_replay --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// The trace is generated once (seeded) into $TMPDIR/hisparse_bench_replay_dsv32 (50 MB).
#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/replay/replay_engine.h"
#include "traces/trace_generator.h"
#include "traces/trace_source.h"
#include "traces/trace_writer.h"

namespace {

namespace fs = std::filesystem;
using namespace hisparse;

const std::string& trace_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const fs::path d = fs::path(tmp ? tmp : "/tmp") / "hisparse_bench_replay_dsv32";
    if (!fs::exists(d / "req_0_topk.npy")) {
      traces::GeneratorOptions g = traces::generator_preset("dsv32");  // 61 layers, K 2048, prompt 32768
      g.requests = 1;
      g.steps = 100;
      auto src = traces::make_generated_trace(g);
      fs::remove_all(d);
      auto w = traces::make_trace_writer(d.string(), traces::TraceFormat::kNpy, src->meta());
      traces::copy_trace(*src, *w);
    }
    return d.string();
  }();
  return dir;
}

std::vector<int32_t> sizes_of(int64_t configs) {
  return configs == 1 ? std::vector<int32_t>{4096} : std::vector<int32_t>{2048, 3072, 4096, 6144, 8192};
}

/// Entries one run replays (selected entries summed over configurations), from one in-process run.
int64_t entries_of(int64_t configs) {
  auto src = traces::open_trace(trace_dir());
  sim::ReplayOptions o;
  o.policies = {"sglang-lru"};
  o.buffer_sizes = sizes_of(configs);
  return sim::run_replay(*src, o).entries;
}

void BM_replay_command(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t configs = state.range(1);
  const int64_t entries = entries_of(configs);
  std::string sizes;
  for (int32_t h : sizes_of(configs)) sizes += (sizes.empty() ? "" : ",") + std::to_string(h);
  const std::string cmd = std::string(HISPARSE_CLI) + " replay --trace " + trace_dir() + " --buffer-sizes " + sizes +
                          " --policy sglang-lru --quiet --threads " + std::to_string(threads) + " > /dev/null";
  // The children's CPU time (user + system, the shell's included: ~1 ms) next to the wall time: on a shared machine
  // the wall time includes waiting for a core, the CPU time does not.
  const auto child_cpu = [] {
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  const double cpu0 = child_cpu();
  for (auto _ : state) {
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      state.SkipWithError(("hisparse replay failed: " + cmd).c_str());
      return;
    }
  }
  const double cpu = (child_cpu() - cpu0) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  state.counters["cpu_ms"] = 1e3 * cpu;
  state.counters["M_entries_per_cpu_s"] = static_cast<double>(entries) / std::max(cpu, 1e-9) / 1e6;
  state.SetItemsProcessed(state.iterations() * entries);
  state.counters["threads"] = threads;
  state.counters["configurations"] = static_cast<double>(configs);
}
BENCHMARK(BM_replay_command)
    ->ArgNames({"threads", "configs"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 5})
    ->Args({2, 5})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

void BM_replay_in_process(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool reference = state.range(1) != 0;
  int64_t entries = 0;
  for (auto _ : state) {
    auto src = traces::open_trace(trace_dir());
    sim::ReplayOptions o;
    o.policies = {"sglang-lru"};
    o.buffer_sizes = {4096};
    o.threads = threads;
    o.reference_lru = reference;
    entries += sim::run_replay(*src, o).entries;
  }
  state.SetItemsProcessed(entries);
}
BENCHMARK(BM_replay_in_process)
    ->ArgNames({"threads", "reference"})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
