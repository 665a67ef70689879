// @brief `hisparse validate --backend cuda`: random cases and traces through the CPU reference and a device backend;
// every output, state array and copied byte compared; one table row per operation; non-zero exit on any mismatch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/core.h>

#include "apps/command.h"
#include "apps/validate.h"
#include "core/error.h"
#include "cpu_ref/backend_cpu.h"
#include "cuda/backend_cuda.h"
#include "cuda/kernel_config.h"
#include "cuda/runtime.h"

namespace hisparse::apps {

const std::vector<ValidateOp>& validate_ops() {
  static const std::vector<ValidateOp> table = {
      {"swap-in", "batched swap-in (+ its miss copy in each copy mode), random states and inputs", validate_swap_in},
      {"swap-in-trace", "whole top-k traces (--trace) through both backends, step by step", validate_swap_in_trace},
      {"gather", "scattered host->device row copy", validate_gather},
      {"backup", "newest-token backup, device->host, all requests x layers", validate_backup},
      {"attention", "sparse MLA decode attention: exact kernel bit for bit, fast kernel within tolerance",
       validate_attention},
      {"indexer", "lightning-indexer scores (64 heads x 128 dims), bit for bit", validate_indexer},
      {"indexer-fp8", "lightning-indexer scores, fp8 E4M3 q and keys with a per-row key scale, bit for bit",
       validate_indexer_fp8},
      {"topk", "top-k positions (ties to the smaller position, ascending output), exactly", validate_topk},
  };
  return table;
}

uint64_t case_seed(uint64_t seed, const char* op, int64_t index) {
  // splitmix64 over (seed, op name, index): each case reproducible on its own.
  uint64_t h = seed ^ 0x9E3779B97F4A7C15ull;
  for (const char* p = op; *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 0x100000001B3ull;
  uint64_t z = h + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Checker::fail(const std::string& message) {
  if (!ok_) return;
  ok_ = false;
  ++report_.mismatched_cases;
  if (report_.first_mismatch.empty())
    report_.first_mismatch = fmt::format("case {} (seed {}; {}): {}", case_index_, seed_, context_, message);
}

void Checker::bytes(const char* what, const uint8_t* ref, const uint8_t* dut, size_t n, int64_t row_bytes) {
  report_.values += static_cast<int64_t>(n);
  if (std::memcmp(ref, dut, n) == 0) return;
  for (size_t i = 0; i < n; ++i) {
    if (ref[i] != dut[i]) {
      return fail(fmt::format("{} byte {} (row {}, offset {}): reference 0x{:02x}, device 0x{:02x}", what, i,
                              static_cast<int64_t>(i) / row_bytes, static_cast<int64_t>(i) % row_bytes, ref[i],
                              dut[i]));
    }
  }
}

void Checker::counters(const char* what, const SwapInCounters* ref, const SwapInCounters* dut, size_t n) {
  report_.values += static_cast<int64_t>(n * 6);
  for (size_t i = 0; i < n; ++i) {
    const SwapInCounters& a = ref[i];
    const SwapInCounters& b = dut[i];
    if (a.selected != b.selected || a.hits != b.hits || a.newest_hits != b.newest_hits || a.misses != b.misses ||
        a.h2d_bytes != b.h2d_bytes || a.fast_path != b.fast_path) {
      return fail(fmt::format("{}[{}]: reference selected/hits/newest/misses/bytes/fast = {}/{}/{}/{}/{}/{}, "
                              "device {}/{}/{}/{}/{}/{}",
                              what, i, a.selected, a.hits, a.newest_hits, a.misses, a.h2d_bytes, a.fast_path,
                              b.selected, b.hits, b.newest_hits, b.misses, b.h2d_bytes, b.fast_path));
    }
  }
}

namespace {

void print_table(const std::vector<OpReport>& reports) {
  fmt::print("\n{:<15} {:<12} {:>8} {:>14} {:>10} {:>9} {:>8}\n", "operation", "variant", "cases", "values",
             "mismatch", "rejected", "seconds");
  for (const auto& r : reports)
    fmt::print("{:<15} {:<12} {:>8} {:>14} {:>10} {:>9} {:>8.2f}\n", r.op, r.variant, r.cases, r.values,
               r.mismatched_cases, r.rejected_both, r.seconds);
  for (const auto& r : reports)
    if (!r.first_mismatch.empty()) fmt::print("first mismatch of {} ({}): {}\n", r.op, r.variant, r.first_mismatch);
}

}  // namespace

int run_validate(int argc, char** argv) { return run_validate_reports(argc, argv, nullptr); }

int run_validate_reports(int argc, char** argv, std::vector<OpReport>* reports_out) {
  namespace po = boost::program_options;
  ValidateOptions opt;
  std::string backend, kernels = "default";
  po::options_description desc(
      "hisparse validate: the CPU reference against a device backend, bit for bit\n"
      "(every output, every state array, every copied KV byte). Options");
  desc.add_options()("help,h", "this help")(
      "backend", po::value(&backend)->default_value("cuda"),
      "backend checked against the CPU reference: cuda, or cpu (the reference against itself: checks the harness)")(
      "cases", po::value(&opt.cases)->default_value(1000), "random cases per operation")(
      "start-case", po::value(&opt.start_case)->default_value(0), "first case index (rerun one case with --cases 1)")(
      "seed", po::value(&opt.seed)->default_value(1), "seed of the random cases")(
      "trace", po::value(&opt.trace), "top-k trace (native, .npy directory or JSON lines) replayed through both")(
      "trace-steps", po::value(&opt.trace_steps)->default_value(0), "replay at most this many step records (0 = all)")(
      "only", po::value(&opt.only)->multitoken(), "run only these operations (see the list below)")(
      "kernel-config", po::value(&kernels)->default_value(kernels),
      "cuda: kernel variants validated, key=value,... (keys below; every variant must match bit for bit)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    std::ostringstream os;
    os << desc;
    fmt::print("{}\noperations:\n", os.str());
    for (const auto& op : validate_ops()) fmt::print("  {:<14} {}\n", op.name, op.summary);
    fmt::print("--kernel-config keys (docs/kernels.md):\n{}", cuda::kernel_config_help());
    return 0;
  }
  po::notify(vm);
  if (opt.cases < 0) throw_error("--cases {}: expected >= 0", opt.cases);
  cuda::reject_retired_kernel_env();
  const cuda::KernelConfig kernel_config = cuda::parse_kernel_config(kernels);
  if (backend != "cuda" && kernel_config != cuda::KernelConfig{})
    throw_error("--kernel-config {}: only the cuda backend has kernel variants", kernels);
  for (const auto& name : opt.only) {
    bool known = false;
    for (const auto& op : validate_ops()) known = known || name == op.name;
    if (!known) throw_error("--only {}: unknown operation (see hisparse validate --help)", name);
  }

  cpu_ref::CpuBackend ref;
  std::unique_ptr<Backend> dut;
  if (backend == "cuda") {
    std::string why;
    if (!cuda::cuda_available(&why))
      throw_error("--backend cuda{}: {}. On a machine without a GPU, `hisparse validate --backend cpu` checks the "
                  "harness against the reference (no kernel is tested then); run the CUDA check on a GPU machine "
                  "(scripts/gpu_check.sh)",
                  vm["backend"].defaulted() ? " (the default)" : "", why);
    dut = std::make_unique<cuda::CudaBackend>(kernel_config);
    fmt::print("validate: cpu reference vs cuda on {} (--kernel-config {})\n", cuda::device_name(),
               cuda::to_spec(kernel_config));
  } else if (backend == "cpu") {
    dut = std::make_unique<cpu_ref::CpuBackend>();
    fmt::print("validate: cpu reference vs cpu reference (harness check)\n");
  } else {
    throw_error("--backend {}: expected cuda or cpu", backend);
  }
  fmt::print("seed {}, {} random cases per operation from case {}{}\n", opt.seed, opt.cases, opt.start_case,
             opt.trace.empty() ? "" : ", trace " + opt.trace);
  std::fflush(stdout);

  ValidateContext ctx{ref, *dut, opt};
  std::vector<OpReport> reports;
  for (const auto& op : validate_ops()) {
    if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), op.name) == opt.only.end()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const size_t first = reports.size();
    // Progress on stderr: the CPU reference side of a full run takes minutes (attention most of them).
    fmt::print(stderr, "validate: {} ...\n", op.name);
    op.run(ctx, reports);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t op_cases = 0, op_bad = 0;
    for (size_t i = first; i < reports.size(); ++i) {
      op_cases += reports[i].cases;
      op_bad += reports[i].mismatched_cases;
    }
    fmt::print(stderr, "validate: {} done in {:.1f} s ({} cases, {} mismatches)\n", op.name, s, op_cases, op_bad);
    // The time of an operation is shared evenly among its variant rows (they interleave case by case).
    for (size_t i = first; i < reports.size(); ++i) reports[i].seconds = s / static_cast<double>(reports.size() - first);
  }
  print_table(reports);
  int64_t cases = 0, bad = 0;
  for (const auto& r : reports) {
    cases += r.cases;
    bad += r.mismatched_cases;
  }
  fmt::print("validate: {} cases, {} mismatches: {}\n", cases, bad, bad == 0 ? "PASS" : "FAIL");
  if (reports_out) *reports_out = reports;
  return bad == 0 ? 0 : 1;
}

}  // namespace hisparse::apps
