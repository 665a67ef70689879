// @brief The validation library behind `hisparse validate` and hisparse.validate(): the table of operations, the
// bit-for-bit checker, the device backend, and the run that returns one report per operation and variant.
#include "validate/validate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/core.h>

#include "core/error.h"
#include "core/progress.h"
#include "cpu_ref/backend_cpu.h"
#include "cuda/backend_cuda.h"
#include "cuda/kernel_config.h"
#include "cuda/runtime.h"

namespace hisparse::validation {

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
      {"swap-in-v2",
       "HiSparse V2 swap-in (resident page / buffer hit / host copy) under both coordinators (older: whole prefix "
       "evicted; current: short-prefix gate, leaf-first tail eviction), random states and --trace",
       validate_swap_in_v2},
      {"gather-layout", "host pool (layer_first, page_first, page_head) -> layer-first device pool, per layer",
       validate_layout_gather},
      {"backup-layout", "layer-first device pool -> host pool (layer_first, page_first, page_head), all layers",
       validate_layout_backup},
      {"deltakv", "DeltaKV reconstruction: mean of bf16 reference rows + fp8 residual x scale, bit for bit",
       validate_deltakv},
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

ValidateResult run_validation(const ValidateRequest& request, const std::function<void(const std::string&)>& say) {
  const ValidateOptions& opt = request.options;
  if (opt.cases < 0) throw_error("--cases {}: expected >= 0", opt.cases);
  cuda::reject_retired_kernel_env();
  const cuda::KernelConfig kernel_config = cuda::parse_kernel_config(request.kernel_config);
  const std::string& backend = request.backend;
  if (backend != "cuda" && kernel_config != cuda::KernelConfig{})
    throw_error("--kernel-config {}: only the cuda backend has kernel variants", request.kernel_config);
  for (const auto& name : opt.only) {
    bool known = false;
    for (const auto& op : validate_ops()) known = known || name == op.name;
    if (!known) throw_error("--only {}: unknown operation (see hisparse validate --help)", name);
  }
  auto tell = [&](const std::string& line) {
    if (say) say(line);
  };

  cpu_ref::CpuBackend ref;
  std::unique_ptr<Backend> dut;
  if (backend == "cuda") {
    std::string why;
    if (!cuda::cuda_available(&why))
      throw_error("--backend cuda{}: {}. On a machine without a GPU, `hisparse validate --backend cpu` checks the "
                  "harness against the reference (no kernel is tested then); run the CUDA check on a GPU machine "
                  "(scripts/gpu_check.sh)",
                  request.backend_defaulted ? " (the default)" : "", why);
    dut = std::make_unique<cuda::CudaBackend>(kernel_config);
    tell(fmt::format("validate: cpu reference vs cuda on {} (--kernel-config {})", cuda::device_name(),
                     cuda::to_spec(kernel_config)));
  } else if (backend == "cpu") {
    dut = std::make_unique<cpu_ref::CpuBackend>();
    tell("validate: cpu reference vs cpu reference (harness check)");
  } else {
    throw_error("--backend {}: expected cuda or cpu", backend);
  }
  tell(fmt::format("seed {}, {} random cases per operation from case {}{}", opt.seed, opt.cases, opt.start_case,
                   opt.trace.empty() ? "" : ", trace " + opt.trace));

  ValidateContext ctx{ref, *dut, opt};
  std::vector<OpReport> reports;
  const auto chosen = [&](const ValidateOp& op) {
    return opt.only.empty() || std::find(opt.only.begin(), opt.only.end(), op.name) != opt.only.end();
  };
  int64_t op_count = 0, ops_done = 0;
  for (const auto& op : validate_ops()) op_count += chosen(op);
  // Operations differ in cost (attention takes most), so the ETA from the operations' rate is a rough one.
  ProgressReporter progress("validate", static_cast<double>(op_count), opt.progress && progress_wanted_by_default(),
                            "operations");
  for (const auto& op : validate_ops()) {
    if (!chosen(op)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const size_t first = reports.size();
    // Progress on stderr: the CPU reference side of a full run takes minutes (attention most of them).
    if (opt.progress) fmt::print(stderr, "validate: {} ...\n", op.name);
    op.run(ctx, reports);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t op_cases = 0, op_bad = 0;
    for (size_t i = first; i < reports.size(); ++i) {
      op_cases += reports[i].cases;
      op_bad += reports[i].mismatched_cases;
    }
    if (opt.progress)
      fmt::print(stderr, "validate: {} done in {:.1f} s ({} cases, {} mismatches)\n", op.name, s, op_cases, op_bad);
    progress.update(static_cast<double>(++ops_done));
    // The time of an operation is shared evenly among its variant rows (they interleave case by case).
    for (size_t i = first; i < reports.size(); ++i) reports[i].seconds = s / static_cast<double>(reports.size() - first);
  }
  progress.finish();
  ValidateResult result;
  for (const auto& r : reports) {
    result.cases += r.cases;
    result.mismatches += r.mismatched_cases;
  }
  result.reports = std::move(reports);
  return result;
}

}  // namespace hisparse::validation
