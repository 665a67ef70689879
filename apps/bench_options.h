// @brief What the `hisparse bench` subcommands share: parsing with one positional (the benchmark) and --help, and
// the --kernel-config option every GPU benchmark takes.
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "cuda/kernel_config.h"

namespace hisparse::apps {

/// Parses argv against `desc` with "what" as the first positional. Prints `desc` (and `extra_help`) and returns
/// false on --help; the caller then exits 0.
bool parse_bench_args(int argc, char** argv, const boost::program_options::options_description& desc,
                      boost::program_options::variables_map& vm, const std::string& extra_help = "");

/// Refuses the retired kernel environment variables and parses a --kernel-config value.
cuda::KernelConfig bench_kernel_config(const std::string& spec);

}  // namespace hisparse::apps
