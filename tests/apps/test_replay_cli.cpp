// @brief `hisparse replay` end to end on a small generated native trace: table, replay.json, replay.csv, plots,
// the per-step CSV, identical files for 1 and 3 threads, and a clear error for a bad buffer size.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cuda/runtime.h"
#include "tests/apps/cli_test_util.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

namespace fs = std::filesystem;
using namespace hisparse;
using hisparse::test::cli;
using hisparse::test::slurp;

namespace {

std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST_CASE("hisparse replay end to end: table, JSON, CSV, plots, per-step CSV, thread-independent output") {
  const fs::path dir = fs::path(HISPARSE_BINARY_DIR) / "test_scratch" / ("replay_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 2;
  g.steps = 15;
  g.layers = 3;
  g.top_k = 16;
  g.prompt_len = 40;
  g.seed = 3;
  auto gen = traces::make_generated_trace(g);
  const fs::path trace = dir / "t.hst";
  auto writer = traces::make_native_writer(trace.string(), gen->meta());
  REQUIRE(traces::copy_trace(*gen, *writer) == 30);

  const std::string base = cli() + " replay --trace " + trace.string() +
                           " --buffer-sizes 32,16,24 --policy sglang-lru,belady,fifo --row-bytes 1000 "
                           "--quiet";
  const std::string run1 = base + " --threads 1 --out " + (dir / "out1").string() + " --per-step-csv " +
                           (dir / "steps1.csv").string() + " > " + (dir / "table.txt").string();
  const std::string run3 = base + " --threads 3 --no-plots --out " + (dir / "out3").string() + " --per-step-csv " +
                           (dir / "steps3.csv").string() + " > /dev/null";
  REQUIRE(std::system(run1.c_str()) == 0);
  REQUIRE(std::system(run3.c_str()) == 0);

  const std::string table = slurp(dir / "table.txt");
  CHECK(table.find("2 requests, 30 decode steps, 3 layers, top_k 16") != std::string::npos);
  // Without a deployment there is no buffer-size recommendation, and the output says what it needs.
  CHECK(table.find("no recommendation: choosing device_buffer_size needs a deployment") != std::string::npos);
  CHECK(table.find("--scenario") != std::string::npos);

  const std::string json = slurp(dir / "out1" / "replay.json");
  CHECK(json == slurp(dir / "out3" / "replay.json"));
  CHECK(slurp(dir / "out1" / "replay.csv") == slurp(dir / "out3" / "replay.csv"));
  CHECK(slurp(dir / "steps1.csv") == slurp(dir / "steps3.csv"));
  CHECK(json.find("\"recommendation\": {\"device_buffer_size\": null") != std::string::npos);
  CHECK(json.find("\"row_bytes\": 1000") != std::string::npos);
  CHECK(fs::file_size(dir / "out1" / "replay_hit_rate.png") > 1000);
  CHECK(fs::file_size(dir / "out1" / "replay_misses.png") > 1000);
  CHECK_FALSE(fs::exists(dir / "out1" / "replay.json.tmp"));

  // replay.csv: 3 policies x 3 sizes, sizes sorted; per-step CSV: one row per (policy, size, request, layer, step).
  const auto summary = read_csv(dir / "out1" / "replay.csv");
  REQUIRE(summary.size() == 1 + 9);
  CHECK(summary[1][0] == "sglang-lru");
  CHECK(summary[1][1] == "16");
  CHECK(summary[3][1] == "32");
  const auto steps = read_csv(dir / "steps1.csv");
  REQUIRE(steps.size() == 1 + 9 * 2 * 3 * 15);
  CHECK(steps[0] == std::vector<std::string>{"policy", "buffer_size", "request", "layer", "step", "seq_len",
                                             "selected", "hits", "newest_hits", "misses", "h2d_bytes"});
  // Every summary row equals the sum of its per-step rows; counters add up on every row.
  for (size_t s = 1; s < summary.size(); ++s) {
    int64_t misses = 0, selected = 0, rows = 0;
    for (size_t i = 1; i < steps.size(); ++i) {
      const auto& r = steps[i];
      if (r[0] != summary[s][0] || r[1] != summary[s][1]) continue;
      ++rows;
      misses += std::stoll(r[9]);
      selected += std::stoll(r[6]);
      CHECK(std::stoll(r[6]) == std::stoll(r[7]) + std::stoll(r[8]) + std::stoll(r[9]));
      CHECK(std::stoll(r[10]) == 1000 * std::stoll(r[9]));
    }
    CHECK(rows == 2 * 3 * 15);
    CHECK(std::to_string(misses) == summary[s][5]);
    CHECK(std::to_string(selected) == summary[s][2]);
  }
  // First rows: request 0, layer 0, steps 0.. with seq_len = prompt_len + step.
  CHECK(steps[1][2] == "0");
  CHECK(steps[1][3] == "0");
  CHECK(steps[1][4] == "0");
  CHECK(steps[1][5] == "40");
  CHECK(steps[2][4] == "1");

  // The whole command's speed, and belady's look-ahead memory, are printed.
  CHECK(table.find("M entries/s for the whole command (1 thread;") != std::string::npos);
  CHECK(table.find("belady look-ahead: windows of up to") != std::string::npos);

  // --backend cuda: the same files with a GPU; without one a clear error and no output.
  const std::string lru_base = cli() + " replay --trace " + trace.string() +
                               " --buffer-sizes 32,16,24 --policy sglang-lru --row-bytes 1000 --quiet --threads 1";
  const std::string cuda_run = lru_base + " --backend cuda --no-plots --out " +
                               (dir / "out_cuda").string() + " > /dev/null 2> " + (dir / "cuda_err.txt").string();
  std::string why;
  if (cuda::cuda_available(&why)) {
    REQUIRE(std::system(cuda_run.c_str()) == 0);
    const std::string cpu_run = lru_base + " --no-plots --out " +
                                (dir / "out_cpu").string() + " > /dev/null";
    REQUIRE(std::system(cpu_run.c_str()) == 0);
    CHECK(slurp(dir / "out_cuda" / "replay.json") == slurp(dir / "out_cpu" / "replay.json"));
  } else {
    CHECK(std::system(cuda_run.c_str()) != 0);
    CHECK(slurp(dir / "cuda_err.txt").find("replay --backend cuda: no usable GPU: ") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out_cuda" / "replay.json"));
  }

  // A buffer size below top_k is refused with the flag named, and no output appears.
  const std::string bad = cli() + " replay --trace " + trace.string() + " --buffer-sizes 8 --quiet --out " +
                          (dir / "bad").string() + " > /dev/null 2> " + (dir / "err.txt").string();
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(slurp(dir / "err.txt").find("buffer size 8 (--buffer-sizes) is smaller than the trace's top_k 16") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad" / "replay.json"));

  // With a deployment: the modelled step time of every replayed step, in the table and in replay.json, labelled
  // modelled and with its batch stated; without one, replay.json has no step_time key (the file as before it).
  MESSAGE("expected: --scenario adds the modelled step time (table and replay.json); no --scenario, no step_time key");
  const std::string with_scenario = lru_base + " --scenario dsv32-8xh200-1tb --rescale-trace-top-k --no-plots --out " +
                                    (dir / "out_scenario").string() + " > " + (dir / "scenario.txt").string();
  REQUIRE(std::system(with_scenario.c_str()) == 0);
  const std::string scenario_table = slurp(dir / "scenario.txt");
  CHECK(scenario_table.find("step time on dsv32-8xh200-1tb (MODELLED") != std::string::npos);
  CHECK(scenario_table.find("requests per DP rank (") != std::string::npos);
  const std::string scenario_json = slurp(dir / "out_scenario" / "replay.json");
  CHECK(scenario_json.find("\"step_time\": {\"modelled\": true") != std::string::npos);
  CHECK(scenario_json.find("\"priced_buffer_size\": 4096") != std::string::npos);  // H 32 of K 16 at K 2048
  CHECK(json.find("step_time") == std::string::npos);
  fs::remove_all(dir);
}
