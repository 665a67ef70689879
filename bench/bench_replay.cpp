// @brief The whole `hisparse replay` command on the issue-16 trace shape (1 request, 61 layers, 100 steps, K 2048,
// 32K context, `.npy` directory, H 4096, sglang-lru), as a user runs it: the CLI binary started per iteration (process
// start, trace decoding and validation, replay, statistics, table), 1 and 2 threads; then the same in process, with the
// counting sglang-lru and with the reference policy object, and a sweep of five buffer sizes in one pass.
// items_per_second = selected entries x configurations per second of wall time.
//
//   build/h16/bench/bench_replay --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// The trace is generated once (seeded) into $TMPDIR/hisparse_bench_replay_dsv32 (50 MB).
#include <benchmark/benchmark.h>

#include <sys/wait.h>
#include <unistd.h>

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
  for (auto _ : state) {
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
      state.SkipWithError(("hisparse replay failed: " + cmd).c_str());
      return;
    }
  }
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
