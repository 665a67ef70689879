// @brief `hisparse bench step --model M`: every op of one decode layer timed on the GPU at the model's shapes over
// batch sizes and context lengths (bench/gpu/step_bench.h); a table per op family, the whole-layer graph against
// the sum of its ops, and a CSV for the calibration fit.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/bench_options.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "apps/step_fit.h"
#include "bench/gpu/step_bench.h"
#include "core/error.h"
#include "core/scenario_loader.h"
#include "cuda/kernel_config.h"
#include "cuda/runtime.h"
#include "core/io/output_file.h"
#include "sim/calibration/step_calibration.h"

namespace hisparse::apps {
namespace {

/// `bench step --fit`: per-op models from a stored sweep, the family and layer checks, a YAML.
int fit_step(const std::string& csv, const std::string& model_override, const std::string& fit_batches, int ep,
             std::string out, std::string date, double max_error_pct) {
  sim::StepCalibration c = fit_step_rows(sim::read_step_csv(csv), model_override, fit_batches, ep);
  c.date = date.empty() ? today_utc() : date;
  c.made_from = "hisparse bench step --fit " + repo_relative(csv) + " --fit-batches " + fit_batches;
  if (out.empty()) out = fmt::format("step-calibration-{}-{}.yaml", c.model, c.date);
  write_file_atomically(out, sim::step_calibration_yaml(c));
  fmt::print("per-op time models of {} on {} (fit on batches {}; every other batch held out), calibrated:\n{}", c.model,
             c.device, fit_batches, sim::step_calibration_table(c));
  std::string worst_what;
  const double worst = worst_held_out_check(c, &worst_what);
  fmt::print("written to {}; held-out max |error| of a family or the layer: {:.1f}% ({}), limit {:.0f}%\n", out,
             100 * worst, worst_what, max_error_pct);
  return 100 * worst > max_error_pct ? 1 : 0;
}

}  // namespace

int run_bench_step(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string what, model = "deepseek-v3.2", batches = "1,2,4,8,16,32,64,128,256", contexts = "4K,16K,64K", csv,
                    kernels = "default", fit_csv, fit_batches = "1,4,16,64,256", out, date;
  double max_error_pct = 10;
  bench::StepBenchOptions opt;
  po::options_description desc(
      "hisparse bench step: every op of one decode layer on the GPU at the model's shapes (MLA projections and "
      "absorbed w_kv_b, indexer, top-k, sparse attention, routed experts, shared expert, dense MLP, norms, RoPE, "
      "SiLU, the gap between kernels in a CUDA graph), and the whole layer as one graph. All-to-all and all-reduce "
      "need several GPUs and are not measured here (the cost model models them). Options");
  desc.add_options()("help,h", "this help")("what", po::value(&what), "step")(
      "model", po::value(&model)->default_value(model), "model name (scenarios/models/) or YAML path")(
      "batches", po::value(&batches)->default_value(batches), "decode tokens per GPU")(
      "contexts", po::value(&contexts)->default_value(contexts), "context lengths (indexer, top-k)")(
      "ep", po::value(&opt.ep)->default_value(opt.ep), "expert-parallel size (routed experts per GPU = experts / ep)")(
      "reps", po::value(&opt.reps)->default_value(opt.reps), "calls captured per CUDA graph")(
      "iters", po::value(&opt.iters)->default_value(opt.iters), "graph replays (median)")(
      "seed", po::value(&opt.seed)->default_value(opt.seed), "seed of the random inputs")(
      "kernel-config", po::value(&kernels)->default_value(kernels), "kernel variants (docs/kernels.md)")(
      "csv", po::value(&csv), "write every row to this CSV file")(
      "fit", po::value(&fit_csv), "fit per-op time models to a stored --csv (no GPU needed) and write a YAML")(
      "fit-batches", po::value(&fit_batches)->default_value(fit_batches), "fit: batches fitted, the others held out")(
      "out", po::value(&out), "fit: the YAML written (default step-calibration-<model>-<date>.yaml)")(
      "date", po::value(&date), "fit: date written into the YAML, YYYY-MM-DD (default today, UTC)")(
      "max-error", po::value(&max_error_pct)->default_value(max_error_pct),
      "fit: exit 1 when a family's or the layer's held-out error exceeds this, %");
  po::variables_map vm;
  if (!parse_bench_args(argc, argv, desc, vm)) return 0;
  opt.kernels = bench_kernel_config(kernels);
  if (!fit_csv.empty()) return fit_step(fit_csv, vm.count("model") ? model : "", fit_batches, opt.ep, out, date,
                                        max_error_pct);
  opt.batches.clear();
  for (int64_t b : parse_count_list(batches, "bench step", "--batches", 1, 4096, "1,8,64")) opt.batches.push_back(int(b));
  opt.contexts = parse_count_list(contexts, "bench step", "--contexts", 1, int64_t(1) << 20, "4K,16K,64K");
  if (opt.reps < 1 || opt.iters < 1) throw_error("bench step: --reps and --iters must be >= 1");
  const ModelSpec m = load_model_spec(model_path(model));
  std::string why;
  if (!cuda::cuda_available(&why)) throw_error("bench step needs a CUDA device: {}", why);
  const std::string device = cuda::device_name();
  fmt::print("bench step: {} on {} (CUDA-graph replay, median of {} replays of {} calls; GEMMs through cuBLASLt, "
             "attention/indexer/top-k the project's kernels; --kernel-config {})\n",
             m.name, device, opt.iters, opt.reps, cuda::to_spec(opt.kernels));
  std::fflush(stdout);
  const auto rows = bench::bench_step(m, opt);
  fmt::print("{:<18} {:<13} {:<5} {:>6} {:>8} {:>11} {:>10} {:>9}\n", "op", "family", "dtype", "batch", "context",
             "median_us", "TFLOP/s", "GB/s");
  for (const auto& r : rows)
    fmt::print("{:<18} {:<13} {:<5} {:>6} {:>8} {:>11.2f} {:>10} {:>9}\n", r.op, r.family, r.dtype, r.batch,
               r.context ? fmt::format("{}", r.context) : "", r.median_us,
               r.flops > 0 ? fmt::format("{:.1f}", r.flops / (r.median_us * 1e-6) / 1e12) : "",
               r.bytes > 0 ? fmt::format("{:.0f}", r.bytes / (r.median_us * 1e-6) / 1e9) : "");
  // The layer as one graph against the sum of its ops: how much the per-op figures miss (overlap, gaps, cache).
  std::map<std::pair<int, int64_t>, std::pair<double, double>> layer;
  for (const auto& r : rows) {
    if (r.op == "layer") layer[{r.batch, r.context}].first = r.median_us;
    if (r.op == "layer_sum_of_ops") layer[{r.batch, r.context}].second = r.median_us;
  }
  fmt::print("\nwhole layer (one graph) vs the sum of its ops, measured:\n{:>6} {:>8} {:>11} {:>11} {:>8}\n", "batch",
             "context", "graph_us", "sum_us", "sum/graph");
  for (const auto& [k, v] : layer)
    fmt::print("{:>6} {:>8} {:>11.2f} {:>11.2f} {:>8.3f}\n", k.first, k.second, v.first, v.second,
               v.first > 0 ? v.second / v.first : 0.0);
  if (!csv.empty()) {
    write_file_atomically(csv, step_csv_text(device, m.name, rows));
    fmt::print("rows written to {}\n", csv);
  }
  return 0;
}

}  // namespace hisparse::apps
