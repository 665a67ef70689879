// @brief Shared argument handling of the `hisparse bench` subcommands.
#include "apps/command_line.h"
#include "apps/bench_options.h"

#include <sstream>

#include <fmt/core.h>

namespace hisparse::apps {

bool parse_bench_args(int argc, char** argv, const boost::program_options::options_description& desc,
                      boost::program_options::variables_map& vm, const std::string& extra_help) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  pos.add("what", 1);
  store_flags(parse_args(argc, argv, desc, &pos), vm);
  if (vm.count("help")) {
    std::ostringstream os;
    os << desc;
    fmt::print("{}{}", os.str(), extra_help);
    return false;
  }
  po::notify(vm);
  return true;
}

cuda::KernelConfig bench_kernel_config(const std::string& spec) {
  cuda::reject_retired_kernel_env();
  return cuda::parse_kernel_config(spec);
}

}  // namespace hisparse::apps
