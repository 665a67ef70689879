// @brief `hisparse bench --calibrate [--from-csv CSV]`: the sweep (or a stored one) → fitted calibration file,
// with the held-out accuracy table on stdout.
#include "apps/bench_calibrate.h"

#include <sstream>

#include <cctype>
#include <ctime>

#include <fmt/format.h>

#include "apps/list_args.h"
#include "apps/step_fit.h"
#include "bench/gpu/step_bench.h"
#include "core/error.h"
#include "core/scenario_loader.h"
#include "cuda/runtime.h"
#include "cuda/swap_in.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/calibration_fit.h"
#include "core/io/output_file.h"
#include "sim/calibration/step_calibration.h"

namespace hisparse::apps {
namespace {

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : text + ",") {
    if (ch == ',') {
      if (cur.empty()) throw_error("{} '{}': expected a comma-separated list of numbers", flag, text);
      out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  return out;
}

double parse_number(const std::string& s, const std::string& flag) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw_error("{}: '{}' is not a number", flag, s);
}

/// "NVIDIA H200" -> "nvidia-h200".
std::string slug(const std::string& name) {
  std::string s;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!s.empty() && s.back() != '-') s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "device" : s;
}

/// `text` with every line indented by two spaces (a YAML document nested under a key).
std::string indented(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += (line.empty() ? "" : "  ") + line + "\n";
  return out;
}

/// `out` without its .yaml suffix, plus `suffix`.
std::string beside(const std::string& out, const std::string& suffix) {
  return (out.size() > 5 && out.substr(out.size() - 5) == ".yaml" ? out.substr(0, out.size() - 5) : out) + suffix;
}

}  // namespace

int run_calibrate(const CalibrateOptions& o) {
  sim::FitOptions fit;
  fit.date = o.date.empty() ? today_utc() : o.date;
  if (fit.date.size() != 10 || fit.date[4] != '-' || fit.date[7] != '-')
    throw_error("--date '{}': expected YYYY-MM-DD", fit.date);
  if (o.copy_mode != "fused" && o.copy_mode != "separate")
    throw_error("--copy-mode '{}': expected fused or separate", o.copy_mode);
  fit.copy_mode = o.copy_mode;
  fit.fit_batches.clear();  // "auto": left empty, the fit picks two sizes per regime
  for (const auto& s : o.fit_batches == "auto" ? std::vector<std::string>{} : split_list(o.fit_batches, "--fit-batches")) {
    const double b = parse_number(s, "--fit-batches");
    if (!(b >= 1) || b != static_cast<int32_t>(b)) throw_error("--fit-batches: '{}' is not a batch size >= 1", s);
    fit.fit_batches.push_back(static_cast<int32_t>(b));
  }
  fit.fit_miss_rates.clear();
  for (const auto& s : split_list(o.fit_miss_rates, "--fit-miss-rates")) {
    const double m = parse_number(s, "--fit-miss-rates");
    if (!(m >= 0 && m <= 1)) throw_error("--fit-miss-rates: '{}' is not a fraction in [0, 1]", s);
    fit.fit_miss_rates.push_back(m);
  }
  if (o.small_batch_max < -1) throw_error("--small-batch-max {}: expected a batch size >= 0 (0 = one regime)", o.small_batch_max);
  fit.small_batch_max = o.small_batch_max;
  std::string csv = o.from_csv;
  std::string step_csv = o.step_csv;  // live: the step sweep's rows once measured
  if (csv.empty()) {
    std::string why;
    if (!cuda::cuda_available(&why)) throw_error("bench --calibrate needs a CUDA device ({}); or fit a stored sweep with --from-csv", why);
    const std::string device = cuda::device_name();
    fmt::print("calibrating on {}: swap-in sweep (fused, separate; batch x miss rate at H 4096, then H 2048, 8192, "
               "16384), gather, backup, bulk copies\n", device);
    std::fflush(stdout);
    bench::BenchOptions b = o.bench;
    b.sweep = true;
    b.copy_engine = false;  // the copy-engine rows (a cudaMemcpy per row, seconds each) are not part of the fit
    std::vector<bench::BenchRow> rows;
    for (auto part : {bench::bench_bulk(b), bench::bench_swap_in(b), bench::bench_gather(b), bench::bench_backup(b)})
      rows.insert(rows.end(), part.begin(), part.end());
    const std::string out = o.out.empty() ? fmt::format("calibration-{}-{}.yaml", slug(device), fit.date) : o.out;
    csv = o.csv.empty() ? beside(out, ".csv") : o.csv;
    write_bench_csv(csv, device, rows);
    // The kernel this build and device run for small batches (also in the CSV's swap-in-kernel row).
    if (fit.small_batch_max < 0) fit.small_batch_max = cuda::swap_in_cluster_max_batch(o.bench.kernels.swap_in);
    fit.made_from = fmt::format("hisparse bench --calibrate --kernel-config {} on {} (rows in {})",
                                cuda::to_spec(o.bench.kernels), device, repo_relative(csv));
    if (o.step) {
      // Every op of one decode layer at the model's shapes (`hisparse bench step`), the rows beside the file.
      bench::StepBenchOptions so;
      for (int64_t b : parse_count_list(o.step_batches, "bench --calibrate", "--step-batches", 1, 4096, "1,8,64"))
        so.batches.push_back(int(b));
      so.contexts = parse_count_list(o.step_contexts, "bench --calibrate", "--step-contexts", 1, int64_t(1) << 20, "4K,64K");
      so.ep = o.ep;
      so.kernels = o.bench.kernels;
      const ModelSpec m = load_model_spec(model_path(o.model.empty() ? "deepseek-v3.2" : o.model));
      fmt::print("calibrating on {}: every op of a {} decode layer (batches {}, contexts {})\n", device, m.name,
                 o.step_batches, o.step_contexts);
      std::fflush(stdout);
      const auto step_rows = bench::bench_step(m, so);
      step_csv = beside(out, "-step.csv");
      write_file_atomically(step_csv, step_csv_text(device, m.name, step_rows));
    }
  } else {
    fit.made_from = repo_relative(o.from_csv);
  }
  const sim::CalibrationInput input = sim::read_bench_csv(csv);
  sim::Calibration c = sim::fit_calibration(input, fit);
  if (o.from_csv.empty()) {
    c.driver = cuda::driver_version();
    c.sm_count = cuda::sm_count();
  }
  const std::string out = o.out.empty() ? fmt::format("calibration-{}-{}.yaml", slug(c.device), fit.date) : o.out;
  std::string text = sim::calibration_yaml(c);
  double step_worst = 0;
  std::string step_worst_what;
  if (!step_csv.empty()) {
    sim::StepCalibration sc = fit_step_rows(sim::read_step_csv(step_csv), o.model, o.step_fit_batches, o.ep);
    if (sc.device != c.device)
      throw_error("bench --calibrate: the step rows {} are of {}, the swap-in rows of {}", step_csv, sc.device, c.device);
    sc.date = fit.date;
    sc.driver = c.driver;
    sc.made_from = fmt::format("hisparse bench step rows {} fitted on batches {} (every other batch held out)",
                               repo_relative(step_csv), o.step_fit_batches);
    text += "# Per-op time models of one decode layer (sim/calibration/step_calibration.h), from the same device.\nstep:\n" +
            indented(sim::step_calibration_yaml(sc));
    fmt::print("per-op time models of {} on {}:\n{}", sc.model, sc.device, sim::step_calibration_table(sc));
    step_worst = 100 * worst_held_out_check(sc, &step_worst_what);
  }
  write_file_atomically(out, text);
  fmt::print("{}", sim::calibration_table(c));
  // The accuracy that counts is the charged mode's (the simulator uses no other); the other is reported.
  const double held = 100 * sim::max_relative_error(c, "held-out", c.copy_mode);
  const std::string other = c.copy_mode == "fused" ? "separate" : "fused";
  fmt::print("held-out max |error|: {} (charged) {:.1f}%, {} (not charged, information) {:.1f}%\n", c.copy_mode, held,
             other, 100 * sim::max_relative_error(c, "held-out", other));
  const int64_t bc = c.swap_in().small_batch_max;
  fmt::print("calibration of {} written to {} (fit on batches {} x miss rates {}; {}); {} held-out max |error| {:.1f}% "
             "(limit {:.0f}%)\n",
             c.device, out, fmt::join(c.fit_batches, ","), o.fit_miss_rates,
             bc > 0 ? fmt::format("two regimes, batches 1..{} and above", bc) : std::string("one regime"), c.copy_mode, held,
             o.max_error_pct);
  if (!step_csv.empty())
    fmt::print("per-op models: held-out max |error| of a family or the layer {:.1f}% ({}), limit {:.0f}%\n", step_worst,
               step_worst_what, o.max_error_pct);
  int status = 0;
  if (held > o.max_error_pct) {
    fmt::print("calibration: swap-in held-out error {:.1f}% exceeds {:.0f}%\n", held, o.max_error_pct);
    status = 1;
  }
  if (step_worst > o.max_error_pct) {
    fmt::print("calibration: per-op held-out error {:.1f}% ({}) exceeds {:.0f}%\n", step_worst, step_worst_what,
               o.max_error_pct);
    status = 1;
  }
  return status;
}

}  // namespace hisparse::apps
