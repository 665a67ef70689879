// @brief `hisparse replay`: replay a top-k trace through swap-in policies and buffer sizes, print the table and
// the buffer-size recommendation, and write replay.json / replay.csv / plots / the per-step CSV.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/plot_script.h"
#include "core/error.h"
#include "core/scenario_loader.h"
#include "sim/output_file.h"
#include "sim/replay/replay_engine.h"
#include "sim/replay/replay_report.h"
#include "traces/trace_source.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int32_t> parse_sizes(const std::string& text) {
  std::vector<int32_t> out;
  for (const auto& item : split_list(text)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || v > (1LL << 30)) {
      throw_error("replay: --buffer-sizes: '{}' is not a positive integer (expected e.g. 2048,4096,8192)", item);
    }
    if (std::find(out.begin(), out.end(), static_cast<int32_t>(v)) == out.end()) out.push_back(static_cast<int32_t>(v));
  }
  if (out.empty()) throw_error("replay: --buffer-sizes '{}' names no size", text);
  std::sort(out.begin(), out.end());
  return out;
}

/// The scattered-row PCIe rate: pcie.gather_row_bytes_per_s (misses are single rows gathered by a kernel), or
/// the bulk rate when a scenario does not give it.
double link_rate(const HardwareSpec& hw, std::string& which) {
  if (hw.pcie.gather_row_bytes_per_s > 0) {
    which = "pcie.gather_row_bytes_per_s";
    return hw.pcie.gather_row_bytes_per_s;
  }
  which = "pcie.h2d_bulk_bytes_per_s";
  return hw.pcie.h2d_bulk_bytes_per_s;
}

sim::MissBudget budget_from(const std::string& scenario, double layer_time_us, int64_t row_bytes) {
  std::string field;
  if (!scenario.empty()) {
    const Scenario s = load_scenario(scenario);
    const double rate = link_rate(s.hardware, field);
    return sim::make_miss_budget(rate, layer_time_us * 1e-6, row_bytes,
                                 fmt::format("scenario {} (hardware {}): {}", scenario, s.hardware.name, field));
  }
  for (const auto& dir : scenario_dirs()) {
    const fs::path p = fs::path(dir) / "hardware" / "h200.yaml";
    if (fs::exists(p)) {
      const HardwareSpec hw = load_hardware_spec(p.string());
      const double rate = link_rate(hw, field);
      return sim::make_miss_budget(rate, layer_time_us * 1e-6, row_bytes,
                                   fmt::format("hardware h200 ({}): {}", p.string(), field));
    }
  }
  return sim::make_miss_budget(50e9, layer_time_us * 1e-6, row_bytes,
                               "built-in 50 GB/s (H200 host, gathered 1152-B rows; no scenarios/hardware/h200.yaml)");
}

}  // namespace

int run_replay(int argc, char** argv) {
  std::string trace_path, sizes_text, policies_text, initial_text, csv_path, out_dir, scenario;
  int32_t top_k = 0;
  int64_t row_bytes = 1152;
  int threads = 0;
  double layer_time_us = 10.0;
  po::options_description desc(
      "hisparse replay --trace T [options]\n\n"
      "Replays a top-k trace (native file, .npy directory or JSON lines) through swap-in policies and device buffer "
      "sizes;\nprints hit rate, misses per step-layer, H2D bytes per step, and the smallest buffer size whose p99 "
      "misses fit\nwhat one PCIe link moves in --layer-time-us.\n\noptions");
  desc.add_options()("help,h", "show this help")(
      "trace", po::value(&trace_path)->required(), "trace path (native file, .npy directory, .jsonl)")(
      "buffer-sizes", po::value(&sizes_text)->default_value("2048,3072,4096,6144,8192"),
      "device_buffer_size values H, comma-separated, each >= top_k")(
      "policy", po::value(&policies_text)->default_value("sglang-lru,belady"),
      "policies, comma-separated: sglang-lru, belady, topk-only, fifo, lfu, clock")(
      "initial-state", po::value(&initial_text), "identity | empty (overrides the trace's)")(
      "top-k", po::value(&top_k), "top_k (overrides the trace's)")(
      "row-bytes", po::value(&row_bytes)->default_value(1152), "bytes of one KV row of one layer")(
      "per-step-csv", po::value(&csv_path), "write one row per (policy, buffer, request, layer, step) to this file")(
      "out", po::value(&out_dir), "write replay.json, replay.csv and PNG plots into this directory")(
      "no-plots", "with --out: skip the PNG plots")(
      "scenario", po::value(&scenario), "deployment whose hardware gives the PCIe rate (default: hardware h200)")(
      "layer-time-us", po::value(&layer_time_us)->default_value(10.0),
      "time the loads of one layer of one request may take, microseconds")(
      "threads", po::value(&threads), "worker threads (default: hardware threads); output is identical for any")(
      "quiet", "no progress on stderr");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  po::notify(vm);

  traces::TraceOpenOptions open_opts;
  if (vm.count("initial-state")) open_opts.initial_state = traces::parse_initial_state(initial_text, "--initial-state");
  if (vm.count("top-k")) {
    if (top_k < 1) throw_error("replay: --top-k {} must be >= 1", top_k);
    open_opts.top_k = top_k;
  }
  if (!vm.count("threads")) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const sim::MissBudget budget = budget_from(scenario, layer_time_us, row_bytes);

  auto source = traces::open_trace(trace_path, open_opts);
  sim::ReplayOptions opt;
  opt.policies = split_list(policies_text);
  opt.buffer_sizes = parse_sizes(sizes_text);
  opt.row_bytes = row_bytes;
  opt.threads = threads;
  opt.keep_step_rows = !csv_path.empty();
  const bool quiet = vm.count("quiet") > 0;
  auto last = std::chrono::steady_clock::now();
  opt.progress = [&](const sim::ReplayProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (quiet || (std::chrono::duration<double>(now - last).count() < 1.0 && p.requests_done < p.requests_total)) {
      return;
    }
    last = now;
    fmt::print(stderr, "replay: {}/{} requests, {} steps, {:.1f} M entries/s\n", p.requests_done, p.requests_total,
               p.steps_done, p.seconds > 0 ? static_cast<double>(p.entries_done) / p.seconds / 1e6 : 0.0);
  };
  if (!out_dir.empty()) fs::create_directories(out_dir);

  std::unique_ptr<sim::StepCsvWriter> csv;
  if (!csv_path.empty()) csv = std::make_unique<sim::StepCsvWriter>(csv_path);
  std::vector<sim::ReplayConfigStats> config_names;
  for (const auto& p : opt.policies) {
    for (int32_t H : opt.buffer_sizes) {
      sim::ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      config_names.push_back(s);
    }
  }
  const sim::ReplayResult result = sim::run_replay(*source, opt, [&](const sim::ReplayRequestRows& rows) {
    csv->write(rows, config_names, row_bytes);
  });
  if (csv) csv->finish();

  fmt::print("{}", sim::format_replay_table(result, budget));
  if (!out_dir.empty()) {
    sim::write_file_atomically((fs::path(out_dir) / "replay.json").string(), sim::replay_json(result, budget));
    sim::write_file_atomically((fs::path(out_dir) / "replay.csv").string(), sim::replay_csv(result));
    if (!vm.count("no-plots")) {
      run_plot_script("plot_replay.py", out_dir, "replay");
    }
    fmt::print("wrote {}/replay.json, replay.csv{}\n", out_dir,
               vm.count("no-plots") ? "" : ", replay_hit_rate.png, replay_misses.png");
  }
  if (!csv_path.empty()) fmt::print("wrote {}\n", csv_path);
  return 0;
}

}  // namespace hisparse::apps
