// @brief Entry point of `hisparse`: dispatches to a subcommand; every error becomes a message and a non-zero exit.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include <fmt/core.h>

#include "apps/command.h"
#include "core/error.h"
#include "cuda/runtime.h"

namespace hisparse::apps {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "print the memory budget of a scenario, each figure with its formula", run_info},
      {"validate", "CPU reference vs a device backend, bit for bit, on random cases and traces", run_validate},
      {"trace", "top-k traces: gen (synthetic), info (overlap, reuse, working set), convert (native, npy)", run_trace},
      {"replay", "replay a top-k trace through swap-in policies and buffer sizes: hit rate, misses, H2D bytes; with "
                 "--scenario, also advise's settings for it",
       run_replay},
      {"check", "the pools of a deployment against a workload's longest request, before anything is simulated: "
                "prompts over a pool, start-up under its engine_version, allocation; every pool's capacity",
       run_check},
      {"plan", "capacity plan: full KV vs HiSparse concurrency, binding limit, throughput, sweeps (JSON/MD/HTML)",
       run_plan},
      {"advise", "the SGLang settings (HiSparse on/off, buffer, ratio, max running requests) that maximise goodput",
       run_advise},
      {"fit-miss-model", "fit a miss surface (miss fraction by H/K, n/H, warm-up) to top-k traces, with provenance",
       run_fit_miss_model},
      {"calibrate", "fit a miss surface to production swap-in counters (vLLM Prometheus, SGLang logs): --from-metrics",
       run_calibrate},
      {"select", "selection study: oracle, indexer, Quest, ClusterKV, sink+recent top-k from keys/queries; recall, "
                 "overlap, swap-in bytes",
       run_select},
      {"sweep", "run a grid of plan / replay / simulate points on a local process pool or MPI ranks; one table",
       run_sweep},
      {"fidelity", "published field measurements vs plan and simulate: error per point, --check against the record",
       run_fidelity},
      {"simulate", "discrete-event serving simulation (full-KV vs HiSparse): TTFT, TPOT, breakdown, timeline", run_simulate},
      {"bench", "GPU benchmarks: swap-in, gather, backup kernels vs bulk-copy ceilings; attention, topk, step (a "
                "decode step); --calibrate writes a calibration YAML",
       run_bench},
  };
  return table;
}

namespace {

/// Standard output is written through a buffer: a full disk or a closed pipe shows only when it is flushed. Checked
/// once at the end of every command (as coreutils do), so `hisparse replay ... > /dev/full` exits non-zero instead of
/// reporting success having printed nothing.
int check_stdout(const char* command, int code) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return code;
  const int err = errno;
  fmt::print(stderr, "hisparse{}{}: error: writing standard output failed{}{}\n", *command ? " " : "", command,
             err ? ": " : "", err ? std::strerror(err) : "");
  return code ? code : 1;
}

void print_usage() {
  fmt::print(stderr, "usage: hisparse <command> [options]   (hisparse <command> --help for its options; hisparse --version)\n\ncommands:\n");
  for (const auto& c : commands()) fmt::print(stderr, "  {:<10} {}\n", c.name, c.summary);
}
}  // namespace

}  // namespace hisparse::apps

namespace {

int run_command(int argc, char** argv) {
  using namespace hisparse::apps;
  if (argc >= 2 && (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version"))) {
    // Whether the backend can be loaded is asked of the dynamic loader only: initialising CUDA would cost this line
    // the start-up that the static runtime saves every CPU command.
    if (HISPARSE_CUDA_BUILT)
      fmt::print("hisparse {} ({} build, CUDA backend built for sm_90a, loaded by the first GPU command: {})\n",
                 HISPARSE_VERSION, HISPARSE_BUILD_TYPE, hisparse::cuda::driver_load_status());
    else
      fmt::print("hisparse {} ({} build, CUDA backend not built)\n", HISPARSE_VERSION, HISPARSE_BUILD_TYPE);
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : commands()) {
    if (!std::strcmp(argv[1], c.name)) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::bad_alloc&) {
        // Whatever size asked for it, "std::bad_alloc" alone names neither the cause nor the way out.
        fmt::print(stderr, "hisparse {}: error: out of memory (std::bad_alloc): the input asks for more than this "
                           "machine can hold; reduce the sizes given (requests, steps, concurrency, lengths)\n",
                   c.name);
        return 1;
      } catch (const std::exception& e) {
        fmt::print(stderr, "hisparse {}: error: {}\n", c.name, e.what());
        return 1;
      }
    }
  }
  fmt::print(stderr, "hisparse: unknown command '{}'\n", argv[1]);
  print_usage();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int code = run_command(argc, argv);
  return hisparse::apps::check_stdout(argc >= 2 && argv[1][0] != '-' ? argv[1] : "", code);
}
