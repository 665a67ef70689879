// @brief `hisparse bench attention|topk`: sparse attention (fast and exact kernels) in TFLOP/s and top-k in µs,
// CUDA-event medians on the device, each row beside its target from issue 8.
#include <boost/program_options.hpp>
#include <fmt/core.h>

#include "apps/bench_options.h"
#include "apps/command.h"
#include "core/error.h"
#include "bench/gpu/op_bench.h"
#include "cuda/kernel_config.h"
#include "cuda/runtime.h"
#include "cuda/sparse_attention.h"

namespace hisparse::apps {

int run_bench_ops(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string what;
  bench::OpBenchOptions opt;
  std::string kernels = "default";
  po::options_description desc("hisparse bench attention|topk: attention kernels and top-k on the GPU. Options");
  desc.add_options()("help,h", "this help")("what", po::value(&what), "attention | topk")(
      "iters", po::value(&opt.iters)->default_value(20), "timed repetitions (median)")(
      "seed", po::value(&opt.seed)->default_value(1), "seed of the random inputs")(
      "kernel-config", po::value(&kernels)->default_value(kernels), "kernel variants timed (topk.* keys; docs/kernels.md)");
  po::variables_map vm;
  if (!parse_bench_args(argc, argv, desc, vm)) return 0;
  opt.kernels = bench_kernel_config(kernels);
  if (what != "attention" && what != "topk") throw_error("bench: '{}', expected attention or topk", what);
  if (opt.iters < 1) throw_error("--iters {}: expected >= 1", opt.iters);
  std::string why;
  if (!cuda::cuda_available(&why)) throw_error("bench needs a CUDA device: {}", why);
  fmt::print("bench {} on {} (CUDA-event medians of {} repetitions after 3 warm-ups; --kernel-config {})\n", what,
             cuda::device_name(), opt.iters, cuda::to_spec(opt.kernels));
  if (what == "attention") fmt::print("fast kernel: {}\n", cuda::fast_attention_variant());
  const auto rows = what == "attention" ? bench::bench_attention(opt) : bench::bench_topk(opt);
  fmt::print("{:<10} {:<28} {:<7} {:>11} {:>11} {:>9}  {:<22} {}\n", "op", "config", "kernel", "median_us",
             "us_per_row", "TFLOP/s", "target", "verdict");
  for (const auto& r : rows)
    fmt::print("{:<10} {:<28} {:<7} {:>11.2f} {:>11} {:>9}  {:<22} {}\n", r.op, r.config, r.kernel, r.median_us,
               r.per_row_us > 0 ? fmt::format("{:.2f}", r.per_row_us) : "",
               r.tflops > 0 ? fmt::format("{:.1f}", r.tflops) : "", r.target, r.verdict);
  return 0;
}

}  // namespace hisparse::apps
