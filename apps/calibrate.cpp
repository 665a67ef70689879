// @brief `hisparse calibrate --from-metrics FILE [FILE...]`: a miss surface from the swap-in counters engines export
// (vLLM's HiSparse Prometheus counters, SGLang log lines), with provenance; sim/miss/counters/metrics_fit.h, docs/capture.md.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/command_line.h"
#include "core/error.h"
#include "sim/miss/counters/metrics_fit.h"
#include "core/io/output_file.h"

namespace hisparse::apps {
namespace {

namespace po = boost::program_options;
constexpr const char* kCommand = "calibrate";

}  // namespace

int run_calibrate(int argc, char** argv) {
  std::vector<std::string> files;
  std::string out, json, name = "production", policy = "sglang-lru", seq_len_metric, model;
  int64_t H = 0, K = 0, row_bytes = 0;
  double seq_len = 0;
  po::options_description desc(
      "hisparse calibrate --from-metrics FILE [FILE...] [--device-buffer-size H --top-k K] [--seq-len N |\n"
      "                   --seq-len-metric NAME] [--row-bytes B] [--model NAME] [--name NAME] [--out FILE.yaml]\n"
      "                   [--json FILE]\n\n"
      "Fits the miss surface the planner and the simulator use to production swap-in counters: vLLM's HiSparse\n"
      "Prometheus counters (vllm:hisparse_cache_hits_total, _cache_misses_total, _host_to_device_bytes_total; deltas\n"
      "between scrapes) or SGLang log lines ('HiSparse swap-in: hits=.. misses=..', 'Decode batch. #running-req: ..\n"
      "#token: ..'). Prints each interval and the fitted points; says what counters cannot identify (docs/capture.md).\n"
      "\noptions");
  desc.add_options()("help,h", "this help")(
      "from-metrics", po::value(&files)->multitoken()->required(),
      "Prometheus text files (one or several scrapes each) or SGLang logs")(
      "device-buffer-size", po::value(&H), "H the server ran with (when the series carry no device_buffer_size label)")(
      "top-k", po::value(&K), "K the server ran with (when the series carry no top_k label)")(
      "seq-len", po::value(&seq_len), "mean context length n of the decoding requests (when the inputs give none)")(
      "seq-len-metric", po::value(&seq_len_metric), "a Prometheus gauge holding the mean context length")(
      "row-bytes", po::value(&row_bytes), "KV bytes per row per layer: misses from H2D bytes when misses are absent")(
      "model", po::value(&model), "keep only series labelled model_name=\"NAME\"")(
      "name", po::value(&name)->default_value(name), "surface name")(
      "policy", po::value(&policy)->default_value(policy), "policy key of the column (the engine's swap-in policy)")(
      "out,o", po::value(&out), "write the miss-surface YAML here (atomically)")(
      "json", po::value(&json), "write intervals, points and caveats as JSON here (atomically)");
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  sim::counters::MetricsFitOptions options;
  auto positive = [](const char* flag, int64_t v, int64_t hi) {
    if (v < 1 || v > hi) throw_error("{}: --{} {} (expected 1..{})", kCommand, flag, v, hi);
  };
  if (vm.count("device-buffer-size")) {
    positive("device-buffer-size", H, int64_t{1} << 24);
    options.H = static_cast<int32_t>(H);
  }
  if (vm.count("top-k")) {
    positive("top-k", K, int64_t{1} << 20);
    options.K = static_cast<int32_t>(K);
  }
  if (vm.count("seq-len")) {
    if (!(seq_len >= 1 && seq_len <= double(1 << 24)))
      throw_error("{}: --seq-len {} (expected 1..{})", kCommand, seq_len, 1 << 24);
    options.seq_len = seq_len;
  }
  if (vm.count("row-bytes")) {
    positive("row-bytes", row_bytes, int64_t{1} << 30);
    options.row_bytes = row_bytes;
  }
  if (!out.empty() && (out.size() <= 5 || out.compare(out.size() - 5, 5, ".yaml") != 0))
    throw_error("{}: --out '{}' must end in .yaml (load_miss_surface tells names from paths by it)", kCommand, out);
  check_surface_name(kCommand, name);
  options.seq_len_metric = seq_len_metric;
  options.model = model;
  options.name = name;
  options.policy = policy;

  const sim::counters::MetricsFit fit = sim::counters::fit_from_metric_files(files, options);
  std::cout << sim::counters::metrics_fit_table(fit);
  if (!out.empty()) {
    write_file_atomically(out,
                               sim::counters::metrics_fit_yaml(fit, quoted_command_line(kCommand, argc, argv)));
    std::cout << "wrote " << out << "\n";
  }
  if (!json.empty()) {
    write_file_atomically(json, sim::counters::metrics_fit_json(fit));
    std::cout << "wrote " << json << "\n";
  }
  return 0;
}

}  // namespace hisparse::apps
