// @brief What `hisparse advise` and `hisparse replay --scenario` share on the command line: the advice flags and
// their reading into the library's AdviseRequest (sim/api/advise_request.h), which loads the scenario, its overrides,
// the miss curves and the labels once for both.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "sim/api/advise_request.h"

namespace hisparse::apps {

/// The advice flags as given (replay leaves trace, policy and buffer_sizes empty: run_replay_request fills them with
/// what it replayed).
struct AdviseArgs {
  std::string scenario, seq_lens, workload, trace, policy = "sglang-lru", buffer_sizes, ratios;
  std::string decision_rule = "worst-case", compare_miss_curves;
  int threads = 1;
  int mix_classes = 16;
};

/// The flags of `advise` (replay adds the ones it lacks itself); the shared override flags come from
/// add_scenario_flags (apps/scenario_flags.h).
void add_advise_options(boost::program_options::options_description& desc, AdviseArgs& args, bool with_trace = true);

/// The library request of `args` and the override flags in `vm`.
sim::AdviseRequest advise_request(const AdviseArgs& args, const boost::program_options::variables_map& vm,
                                  const std::string& command);

using AdviseSetup = sim::AdviceSetup;

}  // namespace hisparse::apps
