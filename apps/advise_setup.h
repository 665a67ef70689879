// @brief What `hisparse advise` and `hisparse replay --scenario` share: the advice flags, the scenario with its
// overrides, the miss curves (trace replay, a given fraction, or the default miss surface) and the labels that say
// where each figure comes from.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "core/deployment_spec.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/miss/miss_curve.h"

namespace hisparse::apps {

struct AdviseArgs {
  std::string scenario, seq_lens, workload, trace, policy = "sglang-lru", buffer_sizes, ratios;
  std::string calibration = "auto", step_calibration = "auto", cost_params, overlap, host_dram, host_reserve;
  std::string miss_curve;  // miss surface name or path ("" = the default surface)
  int threads = 1;
  int mix_classes = 16;
};

/// The flags of `advise` (replay adds the ones it lacks itself).
void add_advise_options(boost::program_options::options_description& desc, AdviseArgs& args, bool with_trace = true);

struct AdviseSetup {
  Scenario scenario;
  sim::AdviseOptions options;
  std::unique_ptr<sim::MissCurves> misses;
  sim::AdviceRunInfo info;
};

/// Loads the scenario, applies the overrides in `vm` (tpot-slo-ms, host-dram-bytes, …), builds the miss curves over
/// the sweep's buffer sizes (replaying args.trace if given: its top_k must equal the scenario's unless
/// --rescale-trace-top-k) and the labels.
AdviseSetup make_advise_setup(const AdviseArgs& args, const boost::program_options::variables_map& vm,
                              const std::string& command);

/// One mix per --seq-lens value, plus the decode mix of --workload; the planner's default lengths without either.
std::vector<sim::ContextMix> advise_mixes(const AdviseArgs& args, const Scenario& s, const std::string& command);

/// Warns where a recommendation rests on the miss model outside the range it was measured over.
void add_extrapolation_warnings(AdviseSetup& setup, const std::vector<sim::Advice>& advices);

}  // namespace hisparse::apps
