// @brief `hisparse fit-miss-model --trace T [--trace T2 ...] --name N --out FILE.yaml`: replays top-k traces at fixed
// buffer-to-top-k ratios with swap-in policies, fits a miss surface with the MissFitter (sim/miss/miss_fitter.h) and
// writes it with its provenance (scenarios/miss_models/*.yaml; scripts/fit_miss_models.sh regenerates the shipped
// ones).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/command_line.h"
#include "apps/list_args.h"
#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "sim/miss/miss_fitter.h"
#include "sim/miss/miss_holdout.h"
#include "sim/miss/miss_surface.h"
#include "core/io/output_file.h"
#include "traces/trace_source.h"

namespace hisparse::apps {
namespace {

namespace po = boost::program_options;

constexpr const char* kCommand = "fit-miss-model";

std::vector<double> parse_ratios(const std::string& text) {
  std::vector<double> out;
  for (const std::string& item : split_list(text)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || !(v >= 1.0 && v <= 1024.0))
      throw_error("{}: --h-over-k: '{}' is not a ratio in [1, 1024] (the buffer holds at least the top-k; expected "
                  "e.g. 1,1.25,1.5,2,3,4,6,8)",
                  kCommand, item);
    if (!out.empty() && !(v > out.back()))
      throw_error("{}: --h-over-k: {} after {}: list the ratios strictly ascending", kCommand, v, out.back());
    out.push_back(v);
  }
  if (out.empty()) throw_error("{}: --h-over-k '{}' names no ratio", kCommand, text);
  return out;
}


std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

/// `text` broken at spaces into lines of at most kHeaderWidth characters; continuation lines indented.
constexpr size_t kHeaderWidth = 110;
void add_wrapped(std::vector<std::string>& out, const std::string& text) {
  std::string line;
  std::stringstream ss(text);
  std::string word;
  while (ss >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > kHeaderWidth) {
      out.push_back(line);
      line = "   ";
    }
    line += (line.empty() || line == "   " ? "" : " ") + word;
  }
  if (!line.empty()) out.push_back(line);
}

std::vector<std::string> header_lines(const sim::MissSurface& s, const std::string& command,
                                      const std::vector<std::string>& skipped, const std::vector<std::string>& notes) {
  const sim::MissProvenance& p = s.provenance;
  std::vector<std::string> h = {
      fmt::format("Miss surface '{}': per-layer miss fraction of swap-in policies by phase of a request (first step,",
                  s.name),
      "warm-up, steady state) and, in the steady state, by H/K (the columns) and n/H (the points of each column).",
      "Read by sim/miss/miss_surface.h: `hisparse simulate --miss-curve NAME`, `hisparse plan --miss-curve NAME`",
      fmt::format("(the default of both: {} below top_k {}, {} from {} on).", sim::kDefaultMissSurface, sim::kLongTopK,
                  sim::kDefaultLongMissSurface, sim::kLongTopK),
      ""};
  add_wrapped(h, "Written by: " + command + (notes.empty() ? "" : " --note ... (the caveats below)"));
  h.push_back("(scripts/fit_miss_models.sh regenerates every shipped surface; the numbers do not depend on --threads)");
  h.push_back("Traces:");
  for (const sim::MissTraceInfo& t : p.traces)
    add_wrapped(h, fmt::format("- {}: {} layers, top_k {}, {} requests, {} decode steps, n {}..{}, initial state {}",
                               t.path, t.layers, t.top_k, t.requests, t.decode_steps, t.n_min, t.n_max,
                               traces::to_string(t.initial_state)));
  add_wrapped(h, "Fraction: " + p.fraction);
  add_wrapped(h, "Warm-up rule: " + p.warmup_rule);
  h.push_back("Evaluation: linear in n/H within a column, flat beyond its measured n/H range; linear in H/K between");
  h.push_back("  columns, flat beyond both ends; then capped by min(1, (n - H) / (K - 1)); 0 when n <= H.");
  h.push_back("");
  h.push_back("Steady-state n/H measured per column (the same for every policy; beyond it the curve is flat, and");
  h.push_back("reports call the fraction extrapolated):");
  const auto& first = s.policies.begin()->second;
  for (const sim::MissColumn& c : first)
    h.push_back(fmt::format("  H/K {:<5g} n/H {}..{} ({} step-layers; warm-up {}, first step {})", c.h_over_k,
                            fixed(c.n_over_h_min, 2), fixed(c.n_over_h_max, 2), c.samples, c.warmup_samples,
                            c.first_step_samples));
  for (const std::string& line : skipped) h.push_back("Left out: " + line);
  if (!notes.empty()) {
    h.push_back("");
    h.push_back("Caveats:");
    for (const std::string& n : notes) h.push_back("  " + n);
  }
  return h;
}

/// The held-out length check's table: every held-out steady point against the training fit, then the errors.
void print_holdout(const sim::HoldoutReport& rep, const std::vector<int64_t>& lengths) {
  fmt::print("held-out check: fitted on the other requests, predicting the requests at n = {} (steady state)\n",
             fmt::join(lengths, ","));
  fmt::print("  {:<11} {:>6} {:>7} {:>9} {:>9} {:>8}\n", "policy", "H/K", "n/H", "measured", "predicted", "error");
  for (const sim::HoldoutPoint& p : rep.points)
    fmt::print("  {:<11} {:>6g} {:>7.2f} {:>9.4f} {:>9.4f} {:>+8.4f}{}\n", p.policy, p.h_over_k, p.n_over_h, p.measured,
               p.predicted, p.predicted - p.measured,
               p.extrapolated ? "  (outside the fit's n/H: its nearest point, flat)" : "");
  fmt::print("  |error| over {} points: mean {:.4f}, max {:.4f}; inside the fit's n/H range ({} points): mean {:.4f}, "
             "max {:.4f}\n",
             rep.points.size(), rep.mean_abs_error, rep.max_abs_error, rep.inside, rep.mean_abs_error_inside,
             rep.max_abs_error_inside);
  for (const std::string& line : rep.unpredicted) fmt::print("  not predicted: {}\n", line);
}

}  // namespace

int run_fit_miss_model(int argc, char** argv) {
  std::vector<std::string> trace_paths, notes, fitted_to;
  double steady_scale = 1;
  std::string ratios_text = "1,1.25,1.5,2,3,4,6,8", policies_text = "sglang-lru,belady", name, out, holdout_text;
  int threads = 1;
  po::options_description desc(
      "hisparse fit-miss-model --trace T [--trace T2 ...] --name NAME --out FILE.yaml [--h-over-k LIST]\n"
      "                        [--policy LIST] [--threads N] [--note TEXT ...]\n"
      "hisparse fit-miss-model --trace T [--trace T2 ...] --holdout-lengths LIST [--h-over-k LIST] [--policy LIST]\n\n"
      "Replays each trace at H = round(h_over_k x its top_k) with every policy (one pass per trace), classifies each\n"
      "step-layer as first step, warm-up (steps 1..ceil(H/K)) or steady state, bins the steady state by n/H, pools\n"
      "the traces at equal H/K and writes the miss surface with its provenance (sim/miss/miss_surface.h).\n"
      "With --holdout-lengths it writes nothing: it fits on the requests whose n range holds none of the lengths,\n"
      "predicts the steady-state fraction of the others from that fit and prints the error (sim/miss/miss_holdout.h).\n"
      "\noptions");
  desc.add_options()("help,h", "this help")(
      "trace", po::value(&trace_paths)->required(), "top-k trace (native, .npy directory or JSON lines); repeatable")(
      "h-over-k", po::value(&ratios_text)->default_value(ratios_text), "buffer-to-top-k ratios, ascending")(
      "policy", po::value(&policies_text)->default_value(policies_text), "swap-in policies (cpu_ref/policies)")(
      "name", po::value(&name), "surface name (letters, digits, '-', '_', '.'); required unless --holdout-lengths")(
      "out,o", po::value(&out), "output YAML path (written atomically); required unless --holdout-lengths")(
      "holdout-lengths", po::value(&holdout_text),
      "sequence lengths (e.g. 20K,28K): hold out the requests whose n range holds one, fit on the rest, print the "
      "prediction error")(
      "threads", po::value(&threads)->default_value(threads), "replay threads (across layers; output identical)")(
      "note", po::value(&notes), "a caveat line for the file's comment header; repeatable")(
      "steady-scale", po::value(&steady_scale),
      "calibrate the level: every steady fraction times this (the shape in H/K and n/H stays measured; first step "
      "and warm-up unscaled); needs --fitted-to")(
      "fitted-to", po::value(&fitted_to),
      "with --steady-scale: a field point run/point (scenarios/field/) the scale was fitted to; repeatable");
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  const bool holdout = !holdout_text.empty();
  if (!holdout && (name.empty() || out.empty()))
    throw_error("{}: --name and --out are required (unless --holdout-lengths)", kCommand);
  if (holdout && (!name.empty() || !out.empty() || !notes.empty()))
    throw_error("{}: --holdout-lengths writes no surface: drop --name, --out and --note", kCommand);
  if (!holdout) check_surface_name(kCommand, name);
  if (!holdout && (out.size() <= 5 || out.compare(out.size() - 5, 5, ".yaml") != 0))
    throw_error("{}: --out '{}' must end in .yaml (load_miss_surface tells names from paths by it)", kCommand, out);
  if (threads < 1) throw_error("{}: --threads {} (expected >= 1)", kCommand, threads);
  const bool calibrated = vm.count("steady-scale") > 0;
  if (calibrated && !(steady_scale > 0 && steady_scale <= 1e6))
    throw_error("{}: --steady-scale {} (expected a number > 0)", kCommand, steady_scale);
  if (calibrated != !fitted_to.empty())
    throw_error("{}: --steady-scale and --fitted-to go together (the scale names the field points it was fitted to)",
                kCommand);
  if (calibrated && holdout) throw_error("{}: --holdout-lengths checks measured fractions: drop --steady-scale", kCommand);
  for (const std::string& point : fitted_to)
    if (point.find('/') == std::string::npos || point.front() == '/' || point.back() == '/')
      throw_error("{}: --fitted-to '{}' (expected run/point, as `hisparse fidelity` names a field point)", kCommand,
                  point);
  const std::vector<double> ratios = parse_ratios(ratios_text);
  const std::vector<std::string> policies = split_list(policies_text);
  if (policies.empty()) throw_error("{}: --policy '{}' names no policy", kCommand, policies_text);
  for (const std::string& p : policies) cpu_ref::make_policy(p);  // rejects unknown names, listing the known ones

  const auto t0 = std::chrono::steady_clock::now();
  sim::MissFitter fitter, held_out;
  sim::HoldoutSplit split;
  if (holdout)
    split.lengths = parse_count_list(holdout_text, kCommand, "--holdout-lengths", 1, int64_t{1} << 31, "20K,28K");
  const sim::FitSplit fit_split{&held_out, [&split](const sim::ReplayRequestRows& rr) { return split.holds(rr); }};
  sim::MissProvenance prov;
  prov.command = quoted_command_line(kCommand, argc, argv);
  prov.fraction = "sum(misses) / sum(selected - newest_hits) per layer over step-layers with n > H (the newest token "
                  "has a reserved slot and never misses; n <= H is the fast path)";
  prov.warmup_rule = "step index s from the request's first step: s = 0 first step; 1 <= s <= ceil(H/K) warm-up "
                     "(each step replaces at most K rows, so until then the buffer may hold rows the request never "
                     "selected); later steps steady state, binned by n/H at edges 1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, "
                     "16, 24, 32, 48, 64 (point = mean n/H of the bin's samples)";
  for (const std::string& path : trace_paths) {
    const int32_t K = traces::open_trace(path)->meta().top_k;
    std::vector<int32_t> sizes;
    for (double r : ratios) {
      const auto H = static_cast<int32_t>(std::llround(r * K));
      if (!sizes.empty() && H == sizes.back())
        throw_error("{}: trace {} (top_k {}): H/K {} and the ratio before it both round to H = {}; drop one", kCommand,
                    path, K, r, H);
      sizes.push_back(H);
    }
    fmt::print("replaying {} (top_k {}) at H = {} with {}\n", path, K, fmt::join(sizes, ","), fmt::join(policies, ","));
    std::fflush(stdout);
    prov.traces.push_back(sim::replay_into_fitter(fitter, path, policies, sizes, ratios, sim::ReplayOptions{}.row_bytes,
                                                  threads, nullptr, holdout ? &fit_split : nullptr));
  }
  if (holdout) {
    print_holdout(sim::compare_held_out(fitter, held_out), split.lengths);
    return 0;
  }
  std::vector<std::string> skipped;
  sim::MissSurface surface = fitter.surface(name, &skipped);
  surface.provenance = prov;
  surface.has_provenance = true;
  if (calibrated) sim::calibrate_steady_level(surface, sim::MissCalibration{steady_scale, fitted_to});
  const std::vector<std::string> header =
      header_lines(surface, quoted_command_line(kCommand, argc, argv, "--note"), skipped, notes);
  write_file_atomically(out, sim::miss_surface_to_yaml(surface, header));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const std::string& line : skipped) fmt::print("left out: {}\n", line);
  for (const auto& [policy, cols] : surface.policies) {
    fmt::print("{}:\n", policy);
    for (const sim::MissColumn& c : cols) {
      std::string pts;
      for (const auto& [r, f] : c.steady) pts += fmt::format(" {:.3g}:{:.4f}", r, f);
      fmt::print("  H/K {:<5g} first {:.4f} warm-up {:.4f} steady{}\n", c.h_over_k, c.first_step, c.warmup, pts);
    }
  }
  fmt::print("wrote {} in {:.1f} s\n", out, seconds);
  return 0;
}

}  // namespace hisparse::apps
