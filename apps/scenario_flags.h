// @brief The override flags every scenario command shares (plan, advise, simulate, replay --scenario): declared by
// one function so a flag has one spelling, one unit and one meaning (per instance, per dp rank, per GPU or per
// node, as its help says), and read back into the library's ScenarioChoice / MissChoice.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "sim/api/scenario_setup.h"

namespace hisparse::apps {

/// Which groups of flags a command takes.
enum ScenarioFlags : unsigned {
  kSettingFlags = 1,     // --device-buffer-size, --host-to-device-ratio, --max-running-requests (advise chooses them)
  kDeploymentFlags = 2,  // --top-k, --mem-fraction-static, --page-size, --kv-dtype, --tpot-slo-ms, memory and pools
  kHostReserveFlag = 4,  // --host-reserve-bytes (plan and advise: host DRAM kept back from the host pools)
  kCostFlags = 8,        // --cost-params, --calibration, --step-calibration, --overlap
  kOverlapBoth = 16,     // --overlap also takes `both` (simulate runs each)
  kMissFlags = 32,       // --miss-curve, --miss-fraction
  kTraceMissFlags = 64,  // --trace, --policy, --threads, --rescale-trace-top-k (plan, advise)
};

/// Adds the flags of `groups` to `desc`, but those named in `except` (a command whose own flag of that name means
/// something else: replay's --top-k and --page-size describe its trace).
void add_scenario_flags(boost::program_options::options_description& desc, unsigned groups,
                        const std::vector<std::string>& except = {});

/// The overrides, cost and calibration choices given in `vm` (flags absent from it, or named in `except`, stay
/// unset); byte sizes such as 1TiB are parsed here. `scenario` is the --scenario value.
sim::ScenarioChoice scenario_choice(const boost::program_options::variables_map& vm, const std::string& scenario,
                                    const std::string& command, const std::vector<std::string>& except = {});

/// The miss model given in `vm`: --miss-curve, --miss-fraction, --rescale-trace-top-k and, `with_trace`, the
/// kTraceMissFlags (replay's --trace and --policy are its own input, not a miss model).
sim::MissChoice miss_choice(const boost::program_options::variables_map& vm, bool with_trace);

}  // namespace hisparse::apps
