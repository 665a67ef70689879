// @brief `hisparse trace gen|info|convert`: make synthetic traces, print their statistics, convert formats.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/core.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "core/work_estimate.h"
#include "traces/trace_generator.h"
#include "traces/trace_source.h"
#include "traces/trace_stats.h"
#include "traces/trace_writer.h"

namespace hisparse::apps {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hisparse::traces;

void usage() {
  fmt::print(stderr,
             "usage: hisparse trace gen --out PATH [--format native|npy] [--preset NAME] [generator flags]\n"
             "       hisparse trace info TRACE [--window N] [--json FILE]\n"
             "       hisparse trace convert IN OUT [--format native|npy]\n"
             "TRACE/IN: a native file, an .npy directory or a JSON-lines file (detected automatically).\n"
             "hisparse trace <sub> --help lists the flags.\n");
}

/// Parses argv with `desc` (+ positionals), printing help when asked. Returns false if help was printed.
bool parse(int argc, char** argv, po::options_description& desc, const po::positional_options_description& pos,
           po::variables_map& vm, const char* what) {
  desc.add_options()("help,h", "this help");
  try {
    store_flags(parse_args(argc, argv, desc, &pos), vm);
    // Help first: `trace gen --help` must not fail on the required flags it is asking about.
    if (vm.count("help")) {
      std::cout << "hisparse trace " << what << "\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw_error("trace {}: {}", what, e.what());
  }
  return true;
}

void add_open_flags(po::options_description& d) {
  d.add_options()("top-k", po::value<int32_t>(), "override the trace's top_k (list width)")(
      "initial-state", po::value<std::string>(), "override the trace's initial state: identity|empty");
}

TraceOpenOptions open_flags(const po::variables_map& vm) {
  TraceOpenOptions o;
  if (vm.count("top-k")) o.top_k = vm["top-k"].as<int32_t>();
  if (vm.count("initial-state")) o.initial_state = parse_initial_state(vm["initial-state"].as<std::string>(), "--initial-state");
  return o;
}

/// Writes `src` to `out` and prints what was written and its size against raw int32. `total_steps` > 0: progress
/// on stderr (see core/progress.h for when it shows).
int write_and_report(TraceSource& src, const std::string& out, TraceFormat format, const TraceWriteOptions& wopt,
                     int64_t total_steps = 0) {
  const TraceMeta meta = src.meta();
  auto writer = make_trace_writer(out, format, meta, wopt);
  int64_t steps = 0;
  if (total_steps > 0) {
    // A step record is every layer's list for one step: the unit the generator produces and the writer takes.
    ProgressReporter progress("trace gen", static_cast<double>(total_steps), progress_wanted_by_default(),
                              fmt::format("step records ({} layers each)", meta.layers));
    StepRecord rec;
    while (src.next(rec)) {
      writer->write(rec);
      progress.update(static_cast<double>(++steps));
    }
    writer->finish();
    progress.finish();
  } else {
    steps = copy_trace(src, *writer);
  }
  const double raw = static_cast<double>(steps) * meta.layers * meta.top_k * 4.0;
  const uint64_t size = writer->bytes_written();
  fmt::print("wrote {} ({}): {} step records, {} layers, top_k {}, {} bytes; raw int32 {:.0f} bytes, ratio {:.2f}x\n",
             out, format == TraceFormat::kNative ? "native" : "npy", steps, meta.layers, meta.top_k, size, raw,
             size ? raw / static_cast<double>(size) : 0.0);
  return 0;
}

/// The size and time of `trace gen` before it starts. Measured 2026-11-28 with the release build on the 2-core
/// development machine: 4 requests × 512 steps × 8 layers × top_k 2048 (33.5 M entries) took 6.2 s compressed at
/// prompt 16K, 7.6 s at prompt 128K, 5.3 s uncompressed; the files were 1/17.3, 1/15.1 and 1/12.0 of raw int32.
/// An .npy directory holds raw int32 (ratio 1); its rate is taken as the native one (not measured apart).
WorkEstimate gen_work_estimate(const GeneratorOptions& g, const std::string& out, TraceFormat format, bool compress) {
  constexpr double kEntriesPerSecond = 33554432 / 7.6;  // the slowest of the three runs
  const double ratio = format == TraceFormat::kNpy ? 1.0 : compress ? 15.1 : 12.0;  // raw int32 / file (the lesser)
  const double entries = static_cast<double>(g.requests) * static_cast<double>(g.steps) * g.layers * g.top_k;
  const double file_bytes = entries * 4 / ratio;
  WorkEstimate e{"trace gen",
                 fmt::format("{} requests × {} steps × {} layers × top_k {} = {} entries, a file of about {} bytes "
                             "(raw int32 / {:g})",
                             format_work_count(static_cast<double>(g.requests)),
                             format_work_count(static_cast<double>(g.steps)), g.layers, g.top_k,
                             format_work_count(entries), format_work_count(file_bytes), ratio),
                 entries / kEntriesPerSecond,
                 fmt::format("rate measured: {:.1f} M entries/s, 2 cores (apps/trace.cpp)", kEntriesPerSecond / 1e6), ""};
  // The file lands next to `out`: a disk that cannot hold it would fail hours in.
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(out), ec).parent_path();
  const fs::space_info space = fs::space(dir, ec);
  if (!ec && file_bytes > static_cast<double>(space.available))
    e.problem = fmt::format("{} has {} bytes free", dir.string(), format_work_count(static_cast<double>(space.available)));
  return e;
}

/// The presets and what each sets, from generator_preset itself so the help cannot drift from it.
std::string preset_help() {
  std::string h = "starting values the other flags override:";
  for (const std::string& name : generator_preset_names()) {
    const GeneratorOptions g = generator_preset(name);
    h += fmt::format("\n  {}: {} requests x {} steps x {} layers, top_k {}, prompt {}, overlap {:g}, sinks {}, window {}, "
                     "{} topics of width {:g}", name, g.requests, g.steps, g.layers, g.top_k, g.prompt_len, g.overlap,
                     g.sinks, g.recent_window, g.topics, g.topic_width);
  }
  return h;
}

int run_gen(int argc, char** argv) {
  GeneratorOptions g;
  std::string out, format = "native", preset = "default", initial_state;
  po::options_description d("trace gen");
  // Defaults are shown from the "default" preset; flags given explicitly override the chosen preset.
  d.add_options()("out,o", po::value(&out)->required(), "output path (file for native, directory for npy)")(
      "format", po::value(&format), "native | npy (default native)")(
      "preset", po::value(&preset), preset_help().c_str())(
      "requests", po::value<int64_t>(), "requests (default 2)")("steps", po::value<int64_t>(), "decode steps per request (64)")(
      "layers", po::value<int32_t>(), "layers (8)")("top-k", po::value<int32_t>(), "top_k (2048)")(
      "prompt-len", po::value<int32_t>(), "seq_len at step 0 (16384)")(
      "overlap", po::value<double>(), "target adjacent-step overlap, 0..1 (0.85)")(
      "sinks", po::value<int32_t>(), "attention sinks: positions 0..sinks-1 always selected (4)")(
      "window", po::value<int32_t>(), "recent window always selected, newest included (64)")(
      "topics", po::value<int32_t>(), "topic centres per layer (8)")(
      "topic-width", po::value<double>(), "topic spread in tokens (512)")(
      "drift", po::value<double>(), "per step and topic: probability its centre jumps (0.02)")(
      "uniform", po::value<double>(), "share of new positions drawn uniformly (0.25)")(
      "layer-spread", po::value<double>(), "per-layer overlap spread (0.1)")(
      "shuffle", "emit lists in random (score) order instead of ascending")(
      "initial-state", po::value(&initial_state), "identity | empty (identity)")(
      "seed", po::value<uint64_t>(), "random seed (1)")("no-compress", "native: store chunks uncompressed")(
      "force", "write it even when the up-front estimate (printed on stderr when 10 s or more) is over an hour or "
               "larger than the free space");
  po::variables_map vm;
  if (!parse(argc, argv, d, {}, vm, "gen")) return 0;
  g = generator_preset(preset);
  if (vm.count("requests")) g.requests = vm["requests"].as<int64_t>();
  if (vm.count("steps")) g.steps = vm["steps"].as<int64_t>();
  if (vm.count("layers")) g.layers = vm["layers"].as<int32_t>();
  if (vm.count("top-k")) g.top_k = vm["top-k"].as<int32_t>();
  if (vm.count("prompt-len")) g.prompt_len = vm["prompt-len"].as<int32_t>();
  if (vm.count("overlap")) g.overlap = vm["overlap"].as<double>();
  if (vm.count("sinks")) g.sinks = vm["sinks"].as<int32_t>();
  if (vm.count("window")) g.recent_window = vm["window"].as<int32_t>();
  if (vm.count("topics")) g.topics = vm["topics"].as<int32_t>();
  if (vm.count("topic-width")) g.topic_width = vm["topic-width"].as<double>();
  if (vm.count("drift")) g.topic_drift = vm["drift"].as<double>();
  if (vm.count("uniform")) g.uniform_fraction = vm["uniform"].as<double>();
  if (vm.count("layer-spread")) g.layer_spread = vm["layer-spread"].as<double>();
  if (vm.count("shuffle")) g.shuffle = true;
  if (vm.count("seed")) g.seed = vm["seed"].as<uint64_t>();
  if (!initial_state.empty()) g.initial_state = parse_initial_state(initial_state, "--initial-state");
  check_generator_options(g);
  TraceWriteOptions w;
  w.compress = !vm.count("no-compress");
  check_work_estimate(gen_work_estimate(g, out, parse_trace_format(format), w.compress), vm.count("force") > 0);
  auto src = make_generated_trace(g);
  return write_and_report(*src, out, parse_trace_format(format), w, g.requests * g.steps);
}

int run_info_cmd(int argc, char** argv) {
  std::string path, json;
  TraceStatsOptions so;
  po::options_description d("trace info");
  d.add_options()("trace", po::value(&path)->required(), "trace to describe")(
      "window", po::value(&so.window), "working-set window in steps (32)")(
      "json", po::value(&json), "also write the statistics as JSON to this file");
  add_open_flags(d);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse(argc, argv, d, pos, vm, "info")) return 0;
  if (so.window < 1) throw_error("trace info: --window {} (expected >= 1)", so.window);
  auto src = open_trace(path, open_flags(vm));
  const TraceStats stats = compute_trace_stats(*src, so);
  fmt::print("{}", format_stats_table(stats));
  if (!json.empty()) {
    write_file_atomically(json, format_stats_json(stats));  // "<json>.tmp", removed if interrupted
    fmt::print("wrote {}\n", json);
  }
  return 0;
}

int run_convert(int argc, char** argv) {
  std::string in, out, format = "native";
  TraceWriteOptions w;
  po::options_description d("trace convert");
  d.add_options()("in", po::value(&in)->required(), "input trace (native, .npy directory or JSON lines)")(
      "out", po::value(&out)->required(), "output path")("format", po::value(&format), "native | npy (default native)")(
      "zstd-level", po::value(&w.zstd_level), "native: zstd level (3)")("no-compress", "native: store chunks uncompressed");
  add_open_flags(d);
  po::positional_options_description pos;
  pos.add("in", 1).add("out", 1);
  po::variables_map vm;
  if (!parse(argc, argv, d, pos, vm, "convert")) return 0;
  const auto ends_with = [&out](const char* ext) {
    const std::string e(ext);
    return out.size() >= e.size() && out.compare(out.size() - e.size(), e.size(), e) == 0;
  };
  // JSON lines are read, not written: a .jsonl name must not silently receive the native format.
  if (ends_with(".jsonl") || ends_with(".json"))
    throw_error("trace convert: --out {}: writing JSON lines is not supported (they can be read); write --format "
                "native (e.g. {}.hstrace) or --format npy (a directory)",
                out, out.substr(0, out.find_last_of('.')));
  if (!vm.count("format") && ends_with(".npy"))
    throw_error("trace convert: --out {}: the .npy format is a directory of req_<id>_*.npy files; pass --format npy "
                "with a directory name",
                out);
  w.compress = !vm.count("no-compress");
  refuse_output_over_input(out, "trace convert: --out", in, "--in");
  auto src = open_trace(in, open_flags(vm));
  return write_and_report(*src, out, parse_trace_format(format), w);
}

}  // namespace

int run_trace(int argc, char** argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const std::string sub = argv[1];
  if (sub == "gen") return run_gen(argc - 1, argv + 1);
  if (sub == "info") return run_info_cmd(argc - 1, argv + 1);
  if (sub == "convert") return run_convert(argc - 1, argv + 1);
  if (sub == "--help" || sub == "-h") {
    usage();
    return 0;
  }
  usage();
  throw_error("unknown trace subcommand '{}' (expected gen, info or convert)", sub);
}

}  // namespace hisparse::apps
