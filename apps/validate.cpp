// @brief `hisparse validate --backend cuda`: the flags and the printed table of the validation library
// (validate/validate.h): random cases and traces through the CPU reference and a device backend, every output,
// state array and copied byte compared; one table row per operation; non-zero exit on any mismatch. With
// `--engine-record FILE` it checks a record of the engine's own kernels instead (validate_engine_record.cpp).
#include <cstdio>
#include <sstream>

#include <boost/program_options.hpp>
#include <fmt/core.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "core/error.h"
#include "cuda/kernel_config.h"
#include "validate/validate.h"

namespace hisparse::apps {

namespace {

using validation::OpReport;

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

int run_validate(int argc, char** argv) {
  namespace po = boost::program_options;
  validation::ValidateRequest req;
  validation::ValidateOptions& opt = req.options;
  std::string engine_record;
  po::options_description desc(
      "hisparse validate: the CPU reference against a device backend, bit for bit\n"
      "(every output, every state array, every copied KV byte). Options");
  desc.add_options()("help,h", "this help")(
      "backend", po::value(&req.backend)->default_value("cuda"),
      "backend checked against the CPU reference: cuda, or cpu (the reference against itself: checks the harness)")(
      "cases", po::value(&opt.cases)->default_value(1000), "random cases per operation")(
      "start-case", po::value(&opt.start_case)->default_value(0), "first case index (rerun one case with --cases 1)")(
      "seed", po::value(&opt.seed)->default_value(1), "seed of the random cases")(
      "trace", po::value(&opt.trace), "top-k trace (native, .npy directory or JSON lines) replayed through both")(
      "trace-steps", po::value(&opt.trace_steps)->default_value(0), "replay at most this many step records (0 = all)")(
      "only", po::value(&opt.only)->multitoken(), "run only these operations (see the list below)")(
      "kernel-config", po::value(&req.kernel_config)->default_value(req.kernel_config),
      "cuda: kernel variants validated, key=value,... (keys below; every variant must match bit for bit)")(
      "engine-record", po::value(&engine_record),
      "instead: check a record of the engine's kernels (.npz of bench/engine_ops/engine_checks.py: SGLang's V2 plan, "
      "FlashMLA, DeepGEMM) against the CPU reference; CPU only, no other option applies");
  po::variables_map vm;
  store_flags(parse_args(argc, argv, desc), vm);
  if (vm.count("help")) {
    std::ostringstream os;
    os << desc;
    fmt::print("{}\noperations:\n", os.str());
    for (const auto& op : validation::validate_ops()) fmt::print("  {:<14} {}\n", op.name, op.summary);
    fmt::print("--kernel-config keys (docs/kernels.md):\n{}", cuda::kernel_config_help());
    return 0;
  }
  po::notify(vm);
  if (vm.count("engine-record")) {
    for (const char* flag : {"backend", "cases", "start-case", "seed", "trace", "trace-steps", "only", "kernel-config"})
      if (vm.count(flag) && !vm[flag].defaulted())
        throw_error("validate: --engine-record checks a recorded file on the CPU; --{} does not apply to it", flag);
    return run_validate_engine_record(engine_record);
  }
  req.backend_defaulted = vm["backend"].defaulted();
  const validation::ValidateResult result = validation::run_validation(req, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  print_table(result.reports);
  fmt::print("validate: {} cases, {} mismatches: {}\n", result.cases, result.mismatches,
             result.mismatches == 0 ? "PASS" : "FAIL");
  return result.passed() ? 0 : 1;
}

}  // namespace hisparse::apps
