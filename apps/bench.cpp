// @brief `hisparse bench swap-in|gather|backup|layouts|deltakv|all`: GPU kernel timings (CUDA events, medians) beside bulk-copy
// ceilings measured in the same run; a table on stdout, optionally a CSV. `--calibrate`: apps/bench_calibrate.cpp.
#include <cstdio>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/core.h>

#include "apps/bench_calibrate.h"
#include "apps/bench_options.h"
#include "apps/command.h"
#include "core/error.h"
#include "bench/gpu/copy_bench.h"
#include "cuda/kernel_config.h"
#include "cuda/runtime.h"
#include "core/io/output_file.h"

namespace hisparse::apps {
namespace {

void print_rows(const std::vector<bench::BenchRow>& rows) {
  fmt::print("{:<14} {:<32} {:<12} {:>11} {:>9} {:>10} {:>7}  {:<20} {}\n", "op", "config", "mode", "median_us",
             "GB/s", "bulk GB/s", "ratio", "target", "verdict");
  for (const auto& r : rows) {
    const std::string ratio = r.ceiling_gbps > 0 && r.gbps > 0 ? fmt::format("{:.1f}%", 100 * r.gbps / r.ceiling_gbps) : "";
    fmt::print("{:<14} {:<32} {:<12} {:>11.2f} {:>9} {:>10} {:>7}  {:<20} {}\n", r.op, r.config, r.mode, r.median_us,
               r.gbps > 0 ? fmt::format("{:.2f}", r.gbps) : "", r.ceiling_gbps > 0 ? fmt::format("{:.2f}", r.ceiling_gbps) : "",
               ratio, r.target, r.verdict);
  }
  std::fflush(stdout);
}

}  // namespace

void write_bench_csv(const std::string& path, const std::string& device, const std::vector<bench::BenchRow>& rows) {
  std::ostringstream os;
  os << "device,op,config,mode,median_us,bytes,gbps,ceiling_gbps,batch,miss_rate,rows,target,verdict\n";
  for (const auto& r : rows)
    os << fmt::format("\"{}\",{},\"{}\",{},{:.3f},{:.0f},{:.3f},{:.3f},{},{:.4f},{},\"{}\",{}\n", device, r.op, r.config,
                      r.mode, r.median_us, r.bytes, r.gbps, r.ceiling_gbps, r.batch, r.miss_rate, r.rows, r.target,
                      r.verdict);
  write_file_atomically(path, os.str());  // removed on SIGINT/TERM/HUP half-way (core/io/output_file.h)
}

int run_bench(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "attention" || std::string(argv[1]) == "topk"))
    return run_bench_ops(argc, argv);  // apps/bench_attention.cpp
  if (argc >= 2 && std::string(argv[1]) == "step") return run_bench_step(argc, argv);  // apps/bench_step.cpp
  namespace po = boost::program_options;
  std::string what = "all", csv;
  bench::BenchOptions opt;
  bool no_sweep = false, no_copy_engine = false, calibrate = false;
  std::string kernels = "default";
  CalibrateOptions cal;
  po::options_description desc(
      "hisparse bench swap-in|gather|backup|layouts|deltakv|all: the copy kernels vs bulk cudaMemcpy (layouts: the host "
      "pool's layer_first, page_first and page_head copies), the DeltaKV reconstruction.\n"
      "hisparse bench attention|topk: the attention kernels (exact, fast; vs PyTorch with "
      "scripts/bench_attention_torch.py) and top-k (`hisparse bench attention --help` for their options).\n"
      "hisparse bench step: every op of one decode layer at a model's shapes (`hisparse bench step --help`).\nOptions");
  desc.add_options()("help,h", "this help")("what", po::value(&what), "swap-in | gather | backup | layouts | deltakv | all | attention | topk")(
      "iters", po::value(&opt.iters)->default_value(30), "timed repetitions per configuration (median)")(
      "seed", po::value(&opt.seed)->default_value(1), "seed of the random rows and states")(
      "no-sweep", po::bool_switch(&no_sweep), "swap-in: skip the batch x miss-rate sweep")(
      "no-copy-engine", po::bool_switch(&no_copy_engine), "gather/backup: skip the copy-engine rows (a memcpy per row)")(
      "kernel-config", po::value(&kernels)->default_value(kernels), "kernel variants timed, key=value,... (below)")(
      "csv", po::value(&csv), "also write every row to this CSV file")(
      "calibrate", po::bool_switch(&calibrate), "run the calibration sweep and write a calibration YAML for the simulator")(
      "out", po::value(&cal.out), "calibrate: the calibration YAML (default calibration-<device>-<date>.yaml)")(
      "from-csv", po::value(&cal.from_csv), "calibrate: fit a stored `--csv` sweep instead of measuring (no GPU needed)")(
      "date", po::value(&cal.date), "calibrate: date written into the file, YYYY-MM-DD (default today, UTC)")(
      "copy-mode", po::value(&cal.copy_mode)->default_value(cal.copy_mode), "calibrate: swap-in copy the simulator charges: fused | separate")(
      "fit-batches", po::value(&cal.fit_batches)->default_value(cal.fit_batches),
      "calibrate: batch sizes fitted, others held out (auto: each kernel regime's smallest and largest measured batch, "
      "e.g. 1,4,16,128 for Bc = 8 or 1,16,64,128 for Bc = 16; one regime: 1,4,16,128)")(
      "small-batch-max", po::value(&cal.small_batch_max),
      "calibrate: Bc, largest batch of the small-batch (cluster) swap-in kernel, fitted apart (0 = one regime; default: "
      "the CSV's swap-in-kernel row, or the device's)")(
      "fit-miss-rates", po::value(&cal.fit_miss_rates)->default_value(cal.fit_miss_rates), "calibrate: miss rates fitted (others held out)")(
      "max-error", po::value(&cal.max_error_pct)->default_value(cal.max_error_pct), "calibrate: exit 1 when a held-out error exceeds this, %")(
      "no-step", po::bool_switch(), "calibrate: leave out the per-op models of a decode layer (the `bench step` sweep)")(
      "step-csv", po::value(&cal.step_csv), "calibrate --from-csv: stored `bench step --csv` rows whose per-op models go "
      "into the same file")(
      "model", po::value(&cal.model), "calibrate: model of the per-op sweep (default deepseek-v3.2; from stored rows: theirs)")(
      "step-batches", po::value(&cal.step_batches)->default_value(cal.step_batches), "calibrate: batches of the per-op sweep")(
      "step-contexts", po::value(&cal.step_contexts)->default_value(cal.step_contexts), "calibrate: contexts of the per-op sweep")(
      "step-fit-batches", po::value(&cal.step_fit_batches)->default_value(cal.step_fit_batches),
      "calibrate: per-op models fitted on these batches, the others held out")(
      "ep", po::value(&cal.ep)->default_value(cal.ep), "calibrate: expert-parallel size of the per-op sweep");
  po::variables_map vm;
  if (!parse_bench_args(argc, argv, desc, vm, "--kernel-config keys (docs/kernels.md):\n" + cuda::kernel_config_help()))
    return 0;
  if (opt.iters < 1) throw_error("--iters {}: expected >= 1", opt.iters);
  opt.kernels = bench_kernel_config(kernels);
  opt.copy_engine = !no_copy_engine;
  if (calibrate) {
    if (vm.count("what")) throw_error("bench --calibrate runs its own set of benchmarks; drop '{}'", what);
    cal.bench = opt;
    cal.csv = csv;
    cal.step = !vm["no-step"].as<bool>();
    return run_calibrate(cal);
  }
  for (const char* only : {"out", "from-csv", "date", "step-csv", "model"})
    if (vm.count(only)) throw_error("bench: --{} needs --calibrate", only);
  if (what != "swap-in" && what != "gather" && what != "backup" && what != "layouts" && what != "deltakv" &&
      what != "all")
    throw_error("bench: unknown benchmark '{}', expected swap-in, gather, backup, layouts, deltakv or all", what);
  if (opt.iters < 1) throw_error("--iters {}: expected >= 1", opt.iters);
  opt.sweep = !no_sweep;
  std::string why;
  if (!cuda::cuda_available(&why)) throw_error("bench needs a CUDA device: {}", why);
  const std::string device = cuda::device_name();
  fmt::print("bench on {} (1152-byte rows, medians of {} repetitions, ceilings = bulk pinned cudaMemcpy of the same "
             "bytes in this run; --kernel-config {})\n",
             device, opt.iters, cuda::to_spec(opt.kernels));
  std::vector<bench::BenchRow> rows;
  auto add = [&](std::vector<bench::BenchRow> r) {
    print_rows(r);
    rows.insert(rows.end(), r.begin(), r.end());
  };
  if (what == "swap-in" || what == "all") add(bench::bench_swap_in(opt));
  if (what == "gather" || what == "all") add(bench::bench_gather(opt));
  if (what == "backup" || what == "all") add(bench::bench_backup(opt));
  if (what == "layouts") add(bench::bench_layouts(opt));  // not in "all": gpu_check.sh runs them as steps of their own
  if (what == "deltakv") add(bench::bench_deltakv(opt));
  if (!csv.empty()) write_bench_csv(csv, device, rows);
  int missed = 0;
  for (const auto& r : rows) missed += r.verdict == "MISS";
  fmt::print("bench: {} rows, {} targets missed\n", rows.size(), missed);
  return 0;
}

}  // namespace hisparse::apps
